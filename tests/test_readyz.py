"""/readyz: the database, the broker and each real chain node (chains/readiness.py); /healthz stays the
liveness probe. The nodes here are real HTTP servers on loopback speaking JSON-RPC, or a closed port."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from django.db import OperationalError
from django.test import override_settings

from chains import readiness
from config.celery import app

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    readiness.forget()
    yield
    readiness.forget()


@pytest.fixture
def broker(tmp_path):  # type: ignore[no-untyped-def]
    """The embedded filesystem broker in a folder of this test (a reachable broker); `broker.down()`."""
    saved = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))
    (tmp_path / "queue").mkdir()
    app.conf.broker_url = "filesystem://"
    app.conf.broker_transport_options = {
        "data_folder_in": str(tmp_path / "queue"),
        "data_folder_out": str(tmp_path / "queue"),
    }

    class Broker:
        def down(self) -> None:
            app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens: refused at once
            app.conf.broker_transport_options = {}

    yield Broker()
    app.conf.broker_url, app.conf.broker_transport_options = saved


class Node:
    """A bitcoind stand-in answering getblockchaininfo; `hang=True` accepts and never answers in time."""

    def __init__(self, *, hang: bool = False) -> None:
        self.calls = 0
        self.release = threading.Event()
        node = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                node.calls += 1
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if hang:
                    node.release.wait(10)
                body = json.dumps(
                    {
                        "result": {"blocks": 120, "bestblockhash": "ab" * 32},
                        "error": None,
                        "id": request["id"],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://kassa:nodepass@127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def node() -> Iterator[Node]:
    running = Node()
    yield running
    running.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _on_node(url: str, **extra: object):  # type: ignore[no-untyped-def]
    return override_settings(
        CHAIN_BACKENDS={"btc": "bitcoincore"},
        CHAIN_NODES={"btc": {"url": url, "network": "regtest"}},
        **extra,
    )


def test_a_sandbox_deployment_is_ready_with_its_database_and_broker(client, broker):
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok", "nodes": {}}
    assert response["X-Request-ID"]


def test_a_broker_that_is_down_is_503_naming_it(client, broker):
    broker.down()

    response = client.get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["failed"] == ["broker"]
    assert body["broker"].startswith("error")
    assert body["database"] == "ok"


def test_a_database_that_is_down_is_503_naming_it(client, broker, monkeypatch):
    from config import views

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OperationalError("connection refused")

    monkeypatch.setattr(views.connection, "cursor", refused)

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["failed"] == ["database"]
    assert response.json()["database"] == "error: OperationalError"


def test_a_node_that_answers_is_ready(client, broker, node):
    with _on_node(node.url):
        response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json()["nodes"] == {"btc": "ok"}
    assert node.calls == 1


def test_a_node_that_refuses_is_503_naming_its_code_without_its_credentials(client, broker):
    with _on_node(f"http://kassa:nodepass@127.0.0.1:{_closed_port()}"):
        response = client.get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["nodes.btc"]
    assert body["nodes"]["btc"] == "error: NodeUnavailable"
    assert b"nodepass" not in response.content


def test_a_hanging_node_is_a_timeout_within_the_budget(client, broker):
    slow = Node(hang=True)
    try:
        with _on_node(slow.url, READYZ_NODE_TIMEOUT_SECONDS=0.3):
            started = time.monotonic()
            response = client.get("/readyz")
            elapsed = time.monotonic() - started
            readiness.forget()
            again = client.get("/readyz")
    finally:
        slow.stop()

    assert response.status_code == 503
    assert response.json()["nodes"] == {"btc": "error: timeout"}
    assert elapsed < 2
    assert again.json()["nodes"] == {"btc": "error: timeout"}
    assert slow.calls == 1  # the question still in flight is not asked again beside itself


def test_node_answers_are_cached_for_a_load_balancer_polling_every_second(client, broker, node, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(readiness, "_clock", lambda: now[0])

    with _on_node(node.url, READYZ_NODE_CACHE_SECONDS=5):
        for _ in range(5):
            assert client.get("/readyz").status_code == 200
            now[0] += 0.9
        assert node.calls == 1
        now[0] += 1.0  # 5.5 s after the first question
        client.get("/readyz")

    assert node.calls == 2


def test_a_cached_failure_recovers_once_the_cache_expires(client, broker, node, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(readiness, "_clock", lambda: now[0])
    port = node.server.server_port
    node.stop()

    with _on_node(f"http://kassa:nodepass@127.0.0.1:{port}"):
        down = client.get("/readyz")
        revived = http.server.ThreadingHTTPServer(("127.0.0.1", port), node.server.RequestHandlerClass)
        threading.Thread(target=revived.serve_forever, daemon=True).start()
        try:
            still_cached = client.get("/readyz")
            now[0] += 6
            up = client.get("/readyz")
        finally:
            revived.shutdown()
            revived.server_close()

    assert down.status_code == still_cached.status_code == 503
    assert up.status_code == 200


def test_codes_on_the_sandbox_are_not_asked(client, broker, node):
    with _on_node(node.url, SANDBOX_ENABLED=True):
        body = client.get("/readyz").json()

    assert list(body["nodes"]) == ["btc"]  # eth, ltc, ... on the sandbox: ready with the database


def test_healthz_does_not_ask_the_nodes(client, broker):
    with _on_node(f"http://kassa:nodepass@127.0.0.1:{_closed_port()}"):
        response = client.get("/healthz")

    assert response.status_code == 200
    assert "nodes" not in response.json()
