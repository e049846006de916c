"""A small webhook receiver for development and tests: verifies signatures, records what it got.

`python manage.py webhook_receiver --port 9000 --secret whsec_...` prints each webhook. Tests start one in
a thread and script its answers (status codes, delays, redirects).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from webhooks.signing import verify


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool | None  # None: no secret to check against
    at: float = field(default_factory=time.time)
    client: str = ""  # the sender's address and port: one value for requests over one connection


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"ok"
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


class WebhookReceiver:
    """Listens on 127.0.0.1; `replies` is consumed in order, then `default` answers every request."""

    def __init__(
        self,
        *,
        port: int = 0,
        secret: str | None = None,
        default: Reply | None = None,
        on_request: Callable[[Received], None] | None = None,
        keep_alive: bool = False,
    ) -> None:
        self.secret = secret
        self.default = default or Reply()
        self.replies: list[Reply] = []
        self.received: list[Received] = []
        self.on_request = on_request
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.1 keeps a sender's connection open between requests, as most real receivers do; HTTP/1.0
            # (the default) closes it after each answer.
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"
            # Headers and body leave in separate writes; without TCP_NODELAY a kept-alive connection waits
            # for the sender's delayed ACK (about 40 ms) before the body goes out.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {key.lower(): value for key, value in self.headers.items()}
                verified = verify(receiver.secret, body, headers) if receiver.secret else None
                host, port = self.client_address[:2]
                got = Received(self.path, headers, body, verified, client=f"{host}:{port}")
                with receiver._lock:
                    receiver.received.append(got)
                    reply = receiver.replies.pop(0) if receiver.replies else receiver.default
                if receiver.on_request:
                    receiver.on_request(got)
                if reply.delay:
                    time.sleep(reply.delay)
                if verified is False:
                    reply = Reply(status=401, body=b"bad signature")
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the sender gave up (timeout); nothing to answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
