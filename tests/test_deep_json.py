"""Hostile nesting against the real web server: no body can kill a gunicorn worker.

Python's JSON parser recurses once per nesting level, in C. With the recursion limit raised by a library
(py_ecc, imported with web3, sets 100,000), 200 KB of `[` overflowed the C stack and the worker died with
SIGSEGV. Bodies are now scanned for depth without recursion before any parser sees them
(core.jsonutil.refuse_deep), and the limit is set back at start-up (core.runtime.pin_recursion_limit).
"""

from __future__ import annotations

import http.client
import json
from uuid import uuid4

import pytest

from tests.workers import children, start_web, wait_for
from tools.bench.server import free_port, stop_process_group

pytestmark = pytest.mark.django_db(transaction=True)
BODIES = 1000
DEEP = b"[" * 200_000


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
    # Far past the per-client budget (120/min), so every body reaches the parser.
    web = start_web(tmp_path, port, log, INVOICE_PUBLIC_RATE="1000000/min")
    try:
        assert wait_for(lambda: _healthz(port) in (200, 503), 60), (tmp_path / "gunicorn.log").read_text()
        workers = children(web.pid)
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
        after = children(web.pid)
        healthy = _healthz(port)
    finally:
        stop_process_group(web)
        log.close()

    assert answers == {(400, "application/problem+json"): BODIES}
    assert after == workers  # the same worker answered them all: none died and was replaced
    assert healthy in (200, 503)  # 503: Redis or the broker is not there (a bare machine); the worker is
