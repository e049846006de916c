"""Real Celery worker processes for reliability tests, sharing the test database and a real broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

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
    var_dir: Path, log_name: str, *, concurrency: int = 4, **extra: str
) -> subprocess.Popen[bytes]:
    """A worker with embedded beat (-B), in its own process group so the whole tree can be killed."""
    log = open(var_dir / log_name, "wb")  # noqa: SIM115 - closed with the process by the caller's stop()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-B",
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "INFO",
            "--schedule",
            str(var_dir / f"{log_name}.beat"),
            "--hostname",
            f"{log_name}@%h",
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
