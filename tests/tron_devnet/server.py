"""The devnet's HTTP server: a thread serving `api.ROUTES` over one `Devnet`, started by tests (on a free
port) or by `python -m tests.tron_devnet`."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.tron_devnet import api
from tests.tron_devnet.encoding import DecodeError
from tests.tron_devnet.node import Devnet

TRONGRID_TRC20 = ("v1", "accounts", "transactions", "trc20")


class Handler(BaseHTTPRequestHandler):
    server: DevnetServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self._answer(url.path, dict(parse_qsl(url.query)))

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            fields = json.loads(body) if body.strip() else {}
        except ValueError:
            self._send(200, {"Error": "class com.alibaba.fastjson.JSONException : not a JSON body"})
            return
        if not isinstance(fields, dict):
            self._send(200, {"Error": "class com.alibaba.fastjson.JSONException : not a JSON object"})
            return
        self._answer(url.path, {**dict(parse_qsl(url.query)), **fields})

    def _answer(self, path: str, fields: dict[str, Any]) -> None:
        parts = path.strip("/").split("/")
        devnet = self.server.devnet
        if len(parts) == 5 and (parts[0], parts[1], parts[3], parts[4]) == TRONGRID_TRC20:
            self._call(lambda: api.trc20_history(devnet, parts[2], fields))
            return
        name = "/".join(parts)
        handler = api.ROUTES.get(name)
        if handler is None:
            self._send(404, {"Error": f"no such endpoint on the devnet: /{name}"})
            return
        visible = str(fields.get("visible", "false")).lower() == "true"
        fields["_solidity"] = name.startswith("walletsolidity/")
        self._call(lambda: _locked(devnet, handler, fields, visible), control=name.startswith("devnet/"))

    def _call(self, run: Any, *, control: bool = False) -> None:
        try:
            self._send(200, run())
        except api.BadRequest as exc:
            self._send(400, {"Error": str(exc)})
        except (DecodeError, ValueError, KeyError, TypeError) as exc:
            if control:
                self._send(400, {"Error": f"{type(exc).__name__}: {exc}"})
            else:
                self._send(
                    200, {"Error": f"class java.lang.IllegalArgumentException : {type(exc).__name__}: {exc}"}
                )

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _locked(devnet: Devnet, handler: api.Handler, fields: dict[str, Any], visible: bool) -> Any:
    # One request at a time sees and changes the chain: a read never meets half a block.
    with devnet.lock:
        return handler(devnet, fields, visible)


class DevnetServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, devnet: Devnet, host: str, port: int, *, verbose: bool = False) -> None:
        super().__init__((host, port), Handler)
        self.devnet, self.verbose = devnet, verbose


@dataclass
class Running:
    """A devnet serving on `url` from a thread; `stop()` shuts it down."""

    url: str
    devnet: Devnet
    server: DevnetServer
    thread: threading.Thread

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def start(host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> Running:
    """A fresh devnet (genesis) on `port` (0: a free one), served from a daemon thread."""
    server = DevnetServer(Devnet(), host, port, verbose=verbose)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="tron-devnet", daemon=True)
    thread.start()
    bound_host, bound_port = server.server_address[:2]
    return Running(f"http://{bound_host}:{bound_port}", server.devnet, server, thread)
