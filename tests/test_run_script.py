"""`make run` (scripts/run.sh) for real, on the embedded default in a fresh var directory: the banner comes
once the web server answers, and a SIGTERM to the script alone (a supervisor, a script, make) stops web,
worker and beat, and the script exits once they have."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from config.celery import child_pids
from tests.workers import ROOT, kill_tree, process_gone, wait_for

EXIT_TIMEOUT = 90  # a failure bound, far above the worker's own 20 s


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).close()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        KASSA_VAR_DIR=str(tmp_path / "var"),
        PORT=str(port),
        SANDBOX_BLOCK_SECONDS="0",
        DJANGO_SETTINGS_MODULE="config.settings.dev",
    )
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(ROOT / "scripts" / "run.sh")],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process, log, f"http://127.0.0.1:{port}/healthz"
    finally:
        kill_tree(process)


def test_the_banner_comes_once_the_server_answers_and_a_sigterm_stops_everything(run):
    process, log, healthz = run

    assert wait_for(lambda: b"public token" in log.read_bytes() or process.poll() is not None, 240)
    answered = _answers(healthz)  # at once, no wait: the banner says the server is there
    children = child_pids(process.pid)
    process.send_signal(signal.SIGTERM)  # the script alone, not its process group
    process.wait(timeout=EXIT_TIMEOUT)

    assert answered, log.read_text()
    assert len(children) >= 3, children  # web, worker, beat
    assert wait_for(lambda: all(process_gone(pid) for pid in children), EXIT_TIMEOUT), log.read_text()
    assert "still running after" not in log.read_text()  # each ended on its SIGTERM, none was killed
