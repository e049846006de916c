"""Real Celery worker processes for reliability tests, sharing the test database and a real broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    """The test database (not the developer's) as a DATABASE_URL for another process."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_env(var_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.dev",
            "DATABASE_URL": database_url(),
            # The broker: Redis when the suite runs against it (CI), else the filesystem broker in var_dir.
            "KASSA_VAR_DIR": str(var_dir),
            "SECRET_KEY": settings.SECRET_KEY,
            "FIELD_ENCRYPTION_KEY": settings.FIELD_ENCRYPTION_KEY,
            "WEBHOOK_ALLOW_PRIVATE_HOSTS": "true",
            "DEBUG": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def start_worker(
    var_dir: Path,
    log_name: str,
    *,
    concurrency: int = 4,
    queues: str = "webhooks,payouts,chain,housekeeping",
    beat: bool = True,
    include: str = "",
    **extra: str,
) -> subprocess.Popen[bytes]:
    """A worker with embedded beat (-B) unless told not, in its own process group so the whole tree can be
    killed; it consumes every queue unless told which, and imports the task modules `include` names too."""
    log = open(var_dir / log_name, "wb")  # noqa: SIM115 - closed with the process by the caller's stop()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            *(["-B", "--schedule", str(var_dir / f"{log_name}.beat")] if beat else []),
            *(["--include", include] if include else []),
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "INFO",
            "--hostname",
            f"{log_name}@%h",
            "--queues",
            queues,
        ],
        cwd=ROOT,
        env=worker_env(var_dir, **extra),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill_tree(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def process_gone(pid: int) -> bool:
    """No such process, or a zombie (ended, waiting for its parent, or init, to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll `condition` every 0.2 s until it holds (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def run_together(operations: list[Callable[[], Any]]) -> list[Any]:
    """Each operation in its own thread and database connection, released at once by a barrier; returns
    each result or the exception it raised, in order."""
    barrier = threading.Barrier(len(operations))
    outcomes: list[Any] = [None] * len(operations)

    def run(index: int, operation: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=30)
            outcomes[index] = operation()
        except Exception as exc:
            outcomes[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=pair) for pair in enumerate(operations)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    return outcomes


def start_web(
    var_dir: Path, port: int, log: Any, *, workers: int = 1, **extra: str
) -> subprocess.Popen[bytes]:
    """Real gunicorn (the production config module) on 127.0.0.1:`port`, in its own process group (stop it
    with tools.bench.server.stop_process_group), its output to `log`."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            "python:config.gunicorn",
            "config.wsgi:application",
            f"--bind=127.0.0.1:{port}",
            f"--workers={workers}",
            "--log-level=warning",
        ],
        cwd=ROOT,
        env=worker_env(var_dir, **extra),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def children(parent: int) -> set[int]:
    """The ids of `parent`'s living child processes, from /proc."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # the process ended while we looked
        if int(fields[1]) == parent:
            found.add(int(stat.parent.name))
    return found
