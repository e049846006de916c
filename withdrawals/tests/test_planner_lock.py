"""The payout planner's lock dies with its holder: a planner SIGKILLed mid-plan holds up no payout."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, connections

from core import locks
from tests.workers import ROOT, wait_for, worker_env
from withdrawals import payouts

# A planner whose planning section signals that it runs (the file argv[2]) and then blocks until it is
# killed: it reads its stdin, a pipe the test never writes to.
PLANNER = """
import sys
import django

django.setup()
from withdrawals import payouts

def planning(code):
    open(sys.argv[2], "w").close()
    sys.stdin.read()
    return []

payouts._plan = planning
payouts.payout_plan(sys.argv[1])
"""


@pytest.fixture
def var_dir(settings, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path  # the file locks of the embedded default live under it
    return tmp_path


@pytest.fixture
def planner(var_dir: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A real planner process of ltc, inside its planning section (holding the lock) when yielded."""
    ready = var_dir / "planning"
    process = subprocess.Popen(
        [sys.executable, "-c", PLANNER, "ltc", str(ready)],
        cwd=ROOT,
        env=worker_env(var_dir),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_for(lambda: ready.exists() or process.poll() is not None, 60)
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        yield process, ready
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        for stream in (process.stdin, process.stderr):
            if stream is not None:
                stream.close()


def _plan_here(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """payout_plan of ltc in this process, its planning section replaced by a marker."""
    monkeypatch.setattr(payouts, "_plan", lambda code: [-1])
    return payouts.payout_plan("ltc")


def _killed_planner_frees_the_lock(planner, monkeypatch: pytest.MonkeyPatch) -> None:
    process, _ = planner

    assert _plan_here(monkeypatch) == []  # the planner in the other process holds the lock
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    # Within seconds, no lease to wait out (PostgreSQL ends the dead client's session when it reads the
    # closed socket, the kernel drops a flock with its process).
    assert wait_for(lambda: _plan_here(monkeypatch) == [-1], 10)
    assert _plan_here(monkeypatch) == [-1]  # and this planner let go of it when done


@pytest.mark.django_db
def test_a_killed_planner_frees_the_lock_at_once(planner, monkeypatch):
    _killed_planner_frees_the_lock(planner, monkeypatch)


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_killed_planner_frees_the_postgresql_advisory_lock_at_once(planner, monkeypatch):
    assert connection.vendor == "postgresql"
    _killed_planner_frees_the_lock(planner, monkeypatch)


@pytest.mark.django_db
def test_a_planner_that_fails_lets_go_of_the_lock(var_dir, monkeypatch):
    def failing(code: str) -> list[int]:
        raise RuntimeError("the node is on fire")

    monkeypatch.setattr(payouts, "_plan", failing)
    with pytest.raises(RuntimeError):
        payouts.payout_plan("ltc")

    if connection.vendor == "postgresql":  # the connection is kept (CONN_MAX_AGE): its lock must not be
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
            )
            assert cursor.fetchone() == (0,)
    with locks.held("payout-plan:ltc") as taken:
        assert taken


@pytest.mark.postgres
@pytest.mark.django_db
def test_an_advisory_lock_whose_unlock_fails_closes_its_connection():
    with locks.held("payout-plan:ltc") as taken:
        assert taken
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (holder,) = cursor.fetchone()
        connection.needs_rollback = True  # an error inside the caller's transaction: no statement runs

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:  # the server ends the closed session, and its lock with it
            assert wait_for(lambda: _session_gone(cursor, holder), 10)
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [locks.advisory_key("payout-plan:ltc")])
            assert cursor.fetchone() == (True,)
    finally:
        other.close()


def _session_gone(cursor, pid: int) -> bool:
    cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
    return cursor.fetchone() == (0,)
