"""The HTTP plumbing the chain devnets share (tests.near_devnet, tests.solana_devnet, tests.tron_devnet): a
threading server holding one devnet's state, a handler answering JSON, and a `Running` devnet served from a
daemon thread on a free port. Routes and answers stay each devnet's own: they copy a different node.

With `api_key`, a request must carry it in `x-api-key`, else HTTP 401 with the handler's `unauthorized`
body (the answer of the provider that devnet stands in for)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Generic, Self, TypeVar

API_KEY_HEADER = "x-api-key"

State = TypeVar("State")


class JsonHandler(BaseHTTPRequestHandler, Generic[State]):
    """A handler answering JSON over kept-alive connections (the node clients keep theirs)."""

    server: DevnetServer[State]
    protocol_version = "HTTP/1.1"
    unauthorized: ClassVar[Any] = {"error": "Unauthorized: a valid x-api-key header is required"}

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _body(self) -> bytes:
        """The request's body, read whole before any answer (else the kept-alive connection desyncs)."""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _authorized(self) -> bool:
        """True, or False once the 401 is sent."""
        expected = self.server.api_key
        if expected is None or self.headers.get(API_KEY_HEADER) == expected:
            return True
        self._send(401, self.unauthorized)
        return False

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class DevnetServer(ThreadingHTTPServer, Generic[State]):
    daemon_threads = True

    def __init__(
        self,
        state: State,
        handler: type[JsonHandler[State]],
        host: str,
        port: int,
        *,
        api_key: str | None = None,
        verbose: bool = False,
    ) -> None:
        super().__init__((host, port), handler)
        self.state, self.api_key, self.verbose = state, api_key, verbose


@dataclass
class Running(Generic[State]):
    """A devnet serving on `url` from a thread; `stop()` shuts it down. Each devnet names its state
    (`chain`, `devnet`) with a property of its subclass."""

    url: str
    server: DevnetServer[State]
    thread: threading.Thread

    @classmethod
    def serve(cls, server: DevnetServer[State], *, name: str) -> Self:
        """`server` served from a daemon thread `name`; a short poll so that `stop()` returns at once."""
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), name=name, daemon=True)
        thread.start()
        bound_host, bound_port = server.server_address[:2]
        host_text = bound_host.decode() if isinstance(bound_host, bytes) else bound_host
        return cls(f"http://{host_text}:{bound_port}", server, thread)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
