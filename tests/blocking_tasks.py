"""A task that never ends, for the shutdown tests (tests/test_worker_shutdown.py): a worker started with
`--include tests.blocking_tasks` and KASSA_TEST_BLOCK_MARKER set sends it to itself once ready; the task
writes its process id to that file, then waits for ever."""

from __future__ import annotations

import os
import threading
from typing import Any

from celery.signals import worker_ready

from config.celery import app

QUEUE = "kassa-test-blocking"


@app.task(name="tests.block_forever")
def block_forever(marker: str) -> None:
    with open(marker, "w") as handle:
        handle.write(str(os.getpid()))
    threading.Event().wait()


@worker_ready.connect
def send_the_blocking_task(**kwargs: Any) -> None:
    marker = os.environ.get("KASSA_TEST_BLOCK_MARKER", "")
    if marker:
        block_forever.apply_async((marker,), queue=QUEUE)
