"""The service under test: its database (created, migrated), a bench merchant, and gunicorn on loopback."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

SETTINGS_MODULE = "tools.bench.settings"
BASE_DIR = Path(__file__).resolve().parents[2]


class ServerError(RuntimeError):
    """gunicorn did not come up (its log is in the message)."""


@dataclass(frozen=True)
class Database:
    vendor: str  # "sqlite" or "postgresql", as Django's connection.vendor says
    description: str


def setup_django() -> None:
    """Configure Django in this process with the bench settings (the same ones gunicorn gets)."""
    # Forced, not setdefault: a DJANGO_SETTINGS_MODULE left in the shell must not point the bench elsewhere.
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    import django

    django.setup()
    from core.runtime import settle_gc

    settle_gc()  # as every Kassa process after start-up: the in-process kinds measure what workers run


def prepare_database() -> Database:
    """Create the PostgreSQL database if needed, migrate, and empty the baseline table."""
    from django.core.management import call_command
    from django.db import connection

    settings_db: dict[str, Any] = connection.settings_dict
    if connection.vendor == "postgresql":
        _create_postgres_database(settings_db)
        description = (
            f"postgresql, database {settings_db['NAME']} at {settings_db.get('HOST') or 'local socket'}"
            f":{settings_db.get('PORT') or 5432}"
        )
    else:
        description = f"{connection.vendor}, {_relative(settings_db['NAME'])}"
    call_command("migrate", interactive=False, verbosity=0)

    from tools.bench.models import BaselineRow

    # Every run starts from an empty baseline table, so its index size does not drift between runs.
    BaselineRow.objects.all().delete()
    return Database(vendor=connection.vendor, description=description)


def settle_database() -> None:
    """PostgreSQL: what autovacuum and the checkpointer do in the background of a running service, done now,
    between two measurements: the previous one's dead rows vacuumed, statistics fresh, dirty pages written.
    A measurement then never pays for the one before it, and no timed checkpoint lands in the middle of it.
    (Some servers run with autovacuum off; then this is all the vacuuming the bench database gets.)"""
    from django.db import DatabaseError, connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
        with suppress(DatabaseError):  # superuser or pg_checkpoint only; without it, vacuuming is enough
            cursor.execute("CHECKPOINT")
    connection.close()  # gunicorn's workers and the kinds open their own


def _create_postgres_database(db: dict[str, Any]) -> None:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    # CREATE DATABASE cannot run inside a transaction, and the target cannot be connected to before it
    # exists: connect to the maintenance database `postgres` in autocommit. Empty parts are left out
    # (None), so libpq's defaults (socket, PGUSER ...) apply as they do for Django.
    conninfo = make_conninfo(
        dbname="postgres",
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
        user=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
    )
    with psycopg.connect(conninfo, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db["NAME"])))
            print(f"created database {db['NAME']}", flush=True)


def create_merchant() -> tuple[str, str]:
    """A fresh merchant per run via the real service; returns (company id, public token)."""
    from django.db import connections

    from payments.services import merchant_create
    from tools.bench.cleanup import BENCH_MERCHANT_NAME, bench_merchant_email

    # The next run recognises it by this e-mail and removes it with its rows (tools.bench.cleanup).
    created = merchant_create(name=BENCH_MERCHANT_NAME, email=bench_merchant_email())
    # gunicorn's workers open their own connections; this process must not hold SQLite or PG sessions open.
    connections.close_all()
    return str(created.company.pk), created.public_token


def worker_count(vendor: str) -> tuple[int, str]:
    """Sync workers for the database, and why that many."""
    if vendor == "sqlite":
        # SQLite has one writer at a time: more workers only queue on its lock, measuring contention.
        return 2, "SQLite allows one writer at a time; more workers would measure lock contention"
    # Sync workers wait on the database between requests, so a few more than the CPUs keep them busy.
    cpus = os.cpu_count() or 1
    return max(2, min(4, 2 * cpus)), f"2 per CPU ({cpus} CPUs), between 2 and 4"


def free_port() -> int:
    # The kernel picks an unused port; the tiny gap before gunicorn binds it is caught by the health wait.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def gunicorn_command(*, port: int, workers: int) -> list[str]:
    """The command line of deploy/systemd/kassa-web.service: its config module, its JSON logger, no control
    socket; only the address and the number of workers are the bench's. The metrics directory is set in
    the environment (`gunicorn`), and the log stream goes to a file, as the unit's goes to the journal."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:config.gunicorn",
        "config.wsgi",
        f"--bind=127.0.0.1:{port}",
        f"--workers={workers}",
        "--worker-class=sync",
        f"--chdir={BASE_DIR}",
        "--error-logfile=-",
        "--logger-class=config.gunicorn_logging.JsonLogger",
        "--no-control-socket",
    ]


@contextmanager
def gunicorn(*, workers: int, log: IO[str]) -> Iterator[str]:
    """Run gunicorn on 127.0.0.1 for the duration of the block; yields its base URL; always stops it."""
    port = free_port()
    command = gunicorn_command(port=port, workers=workers)
    with tempfile.TemporaryDirectory(prefix="kassa-bench-metrics-") as metrics_dir:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": SETTINGS_MODULE,
            "PROMETHEUS_MULTIPROC_DIR": metrics_dir,
            "PYTHONUNBUFFERED": "1",
        }
        # Its own session (process group), so stopping it reaches the workers too, even if the master is
        # stuck.
        process = subprocess.Popen(  # noqa: S603
            command, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _wait_until_up(process, port, log)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop_process_group(process)


def _wait_until_up(process: subprocess.Popen[bytes], port: int, log: IO[str], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"gunicorn exited with {process.returncode}:\n{_read_log(log)}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/healthz")
            conn.getresponse().read()  # any answer means Django is serving; 503 would only be the broker
            conn.close()
            return
        except OSError:
            time.sleep(0.2)
    raise ServerError(f"gunicorn did not answer on port {port} within {timeout_s:.0f}s:\n{_read_log(log)}")


def stop_process_group(process: subprocess.Popen[bytes]) -> None:
    """TERM the whole group (graceful), KILL it if it lingers."""
    for sig, grace_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break  # the group is gone already
        try:
            process.wait(timeout=grace_s)
            break
        except subprocess.TimeoutExpired:
            continue
    # The master may be gone while a worker lingers in the group; make sure nothing is left behind.
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _read_log(log: IO[str]) -> str:
    log.flush()
    return Path(log.name).read_text(errors="replace")[-4000:]


def _relative(path: object) -> str:
    try:
        return str(Path(str(path)).resolve().relative_to(BASE_DIR))
    except ValueError:
        return str(path)
