"""A real worker told to stop ends within WORKER_SHUTDOWN_SECONDS, its children with it, even while a task
never ends: on the filesystem broker and on Redis, for a SIGTERM to the worker (systemd's KillMode=mixed)
and to its whole process group (a supervisor, a script, `make run`)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.blocking_tasks import QUEUE
from tests.workers import kill_tree, process_gone, start_worker, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

BOUND = 3  # WORKER_SHUTDOWN_SECONDS of the workers here
EXIT_TIMEOUT = 60  # a failure bound: far above BOUND plus a slow start


@pytest.fixture
def worker(request, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A worker (the broker the parameter names) whose pool child runs a task that never ends; yields the
    worker and that child's process id."""
    broker = request.param
    marker = tmp_path / "blocking"
    process = start_worker(
        tmp_path,
        "shutdown",
        concurrency=1,
        queues=QUEUE,
        beat=False,
        include="tests.blocking_tasks",
        KASSA_TEST_BLOCK_MARKER=str(marker),
        WORKER_SHUTDOWN_SECONDS=str(BOUND),
        REDIS_URL=settings.REDIS_URL if broker == "redis" else "",
    )
    try:
        assert wait_for(lambda: marker.exists() and marker.read_text().isdigit(), 120), (
            tmp_path / "shutdown"
        ).read_text()
        yield process, int(marker.read_text())
    finally:
        kill_tree(process)


BROKERS = [pytest.param("filesystem"), pytest.param("redis", marks=pytest.mark.redis)]


@pytest.mark.parametrize("worker", BROKERS, indirect=True)
def test_a_sigterm_ends_a_worker_whose_task_never_ends(worker):
    process, child = worker

    process.send_signal(signal.SIGTERM)  # the worker alone: its warm shutdown waits for the task

    process.wait(timeout=EXIT_TIMEOUT)
    assert wait_for(lambda: process_gone(child), EXIT_TIMEOUT)


@pytest.mark.parametrize("worker", BROKERS, indirect=True)
def test_a_sigterm_to_the_process_group_ends_the_worker_and_its_children(worker):
    process, child = worker

    os.killpg(process.pid, signal.SIGTERM)

    process.wait(timeout=EXIT_TIMEOUT)
    assert wait_for(lambda: process_gone(child), EXIT_TIMEOUT)
