"""Hostile nesting against the real web server: no body can kill a gunicorn worker.

Python's JSON parser recurses once per nesting level, in C. With the recursion limit raised by a library
(py_ecc, imported with web3, sets 100,000), 200 KB of `[` overflowed the C stack and the worker died with
SIGSEGV. Bodies are now scanned for depth without recursion before any parser sees them
(payments.jsonutil.refuse_deep), and the limit is set back at start-up (config.runtime.pin_recursion_limit).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path
from uuid import uuid4

import pytest

from bench.server import free_port, stop_process_group
from tests.workers import ROOT, wait_for, worker_env

pytestmark = pytest.mark.django_db(transaction=True)
BODIES = 1000
DEEP = b"[" * 200_000


def _children(parent: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found.add(int(stat.parent.name))
    return found


def _healthz(port: int) -> int:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/healthz")
        return conn.getresponse().status
    except OSError:
        return 0


def test_a_thousand_deeply_nested_bodies_never_kill_the_web_worker(tmp_path):
    port = free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            "python:config.gunicorn",
            "config.wsgi:application",
            f"--bind=127.0.0.1:{port}",
            "--workers=1",
        ],
        cwd=ROOT,
        # Far past the per-client budget (120/min), so every body reaches the parser.
        env=worker_env(tmp_path, INVOICE_PUBLIC_RATE="1000000/min"),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: _healthz(port) in (200, 503), 60), (tmp_path / "gunicorn.log").read_text()
        workers = _children(web.pid)
        path = f"/api/invoices/v1/regular/{uuid4()}/proceed"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        answers: dict[tuple[int, str], int] = {}
        for _ in range(BODIES):
            conn.request("POST", path, body=DEEP, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            answer = json.loads(response.read())
            key = (response.status, response.headers["Content-Type"])
            answers[key] = answers.get(key, 0) + 1
            assert "nested deeper than 64 levels" in answer["detail"], answer
        after = _children(web.pid)
        healthy = _healthz(port)
    finally:
        stop_process_group(web)
        log.close()

    assert answers == {(400, "application/problem+json"): BODIES}
    assert after == workers  # the same worker answered them all: none died and was replaced
    assert healthy in (200, 503)  # 503: Redis or the broker is not there (a bare machine); the worker is
