"""The HTTP plumbing the chain devnets share (tests.near_devnet, tests.solana_devnet, tests.tron_devnet): a
threading server holding one devnet's state, a handler answering JSON (with the `POST /devnet/<name>`
controls the tests drive a devnet by), and a `Running` devnet served from a daemon thread on a free port.
The node's own routes and answers stay each devnet's: they copy a different node.

With `api_key`, a request must carry it in `x-api-key`, else HTTP 401 with the handler's `unauthorized`
body (the answer of the provider that devnet stands in for)."""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

API_KEY_HEADER = "x-api-key"


class Locked(Protocol):
    """A devnet's state: one request at a time holds its lock, so none sees half a block."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...


State = TypeVar("State", bound=Locked)


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

    def _control(
        self, path: str, body: bytes, controls: Mapping[str, Callable[[State, dict[str, Any]], Any]]
    ) -> None:
        """POST /devnet/<name>: the control's own JSON, run under the state's lock; HTTP 404 for no such
        control, 400 for a bad request, 500 (and the traceback on stderr) for a devnet bug."""
        control = controls.get(path.removeprefix("devnet/")) if path.startswith("devnet/") else None
        if control is None:
            self._send(404, {"error": f"no such path on the devnet: /{path}"})
            return
        state = self.server.state
        try:
            fields = json.loads(body) if body.strip() else {}
            if not isinstance(fields, dict):
                raise ValueError("the body is a JSON object")
            with state.lock:
                self._send(200, control(state, fields))
        except (ValueError, KeyError, TypeError) as exc:
            self._send(400, {"error": f"{type(exc).__name__}: {exc}"})
        except Exception as exc:
            traceback.print_exc()
            self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

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
