"""gunicorn's configuration: `gunicorn -c python:config.gunicorn config.wsgi ...` (docs/operations.md).

With `PROMETHEUS_MULTIPROC_DIR` set, a worker that exits (restarted, killed, timed out) is marked dead so
its live gauges stop counting; its counters' files stay, so totals never go backwards.
"""

from __future__ import annotations

import os
from typing import Any


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
