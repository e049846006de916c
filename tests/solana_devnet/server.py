"""The devnet's HTTP server: JSON-RPC 2.0 on `POST /` (single requests and batches, answered with HTTP 200
whatever the outcome, as Agave's server does), and the controls under `/devnet/` (their own JSON, HTTP 400
on a bad request). With `api_key`, every request must carry it in `x-api-key` (else HTTP 401, as a
provider answers a missing key)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from tests import devnet_server
from tests.devnet_server import API_KEY_HEADER as API_KEY_HEADER  # the fixtures' and __main__'s
from tests.devnet_server import DevnetServer, JsonHandler
from tests.solana_devnet import controls
from tests.solana_devnet.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
)
from tests.solana_devnet.node import Devnet
from tests.solana_devnet.rpc import METHODS

INTERNAL_ERROR = -32603


def answer_rpc(devnet: Devnet, body: bytes) -> Any:
    """The JSON-RPC answer to `body`: one response, or a list for a batch."""
    try:
        request = json.loads(body)
    except ValueError:
        return _error(None, RpcError(PARSE_ERROR, "Parse error"))
    if isinstance(request, list):
        if not request:
            return _error(None, RpcError(INVALID_REQUEST, "Invalid request"))
        return [_answer_one(devnet, item) for item in request]
    return _answer_one(devnet, request)


def _answer_one(devnet: Devnet, request: Any) -> dict[str, Any]:
    if not isinstance(request, dict):
        return _error(None, RpcError(INVALID_REQUEST, "Invalid request"))
    request_id = request.get("id")
    name = request.get("method")
    if request.get("jsonrpc") != "2.0" or not isinstance(name, str):
        return _error(request_id, RpcError(INVALID_REQUEST, "Invalid request"))
    handler = METHODS.get(name)
    if handler is None:
        return _error(request_id, RpcError(METHOD_NOT_FOUND, "Method not found"))
    params = request.get("params")
    if params is None:
        params = []
    if not isinstance(params, list):
        return _error(
            request_id, RpcError(INVALID_PARAMS, "Invalid params: invalid type: map, expected a sequence.")
        )
    try:
        with devnet.lock:  # one request at a time sees and changes the chain
            result = handler(devnet, params)
    except RpcError as exc:
        return _error(request_id, exc)
    except Exception as exc:  # a devnet bug: said as an internal error, with what went wrong
        return _error(request_id, RpcError(INTERNAL_ERROR, "Internal error", f"{type(exc).__name__}: {exc}"))
    return {"jsonrpc": "2.0", "result": result, "id": request_id}


def _error(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": error.to_json(), "id": request_id}


class Handler(JsonHandler[Devnet]):
    unauthorized = {
        "jsonrpc": "2.0",
        "error": {"code": -32401, "message": "invalid api key provided"},
        "id": None,
    }

    def do_GET(self) -> None:
        if not self._authorized():
            return
        path = urlsplit(self.path).path.strip("/")
        if path == "devnet/info":
            with self.server.state.lock:
                self._send(200, controls.info(self.server.state, {}))
        else:
            self._send(405 if path == "" else 404, {"error": f"GET /{path}: use POST / for JSON-RPC"})

    def do_POST(self) -> None:
        body = self._body()
        if not self._authorized():
            return
        path = urlsplit(self.path).path.strip("/")
        if path == "":
            self._send(200, answer_rpc(self.server.state, body))
        else:
            self._control(path, body, controls.CONTROLS)


class Running(devnet_server.Running[Devnet]):
    """A Solana devnet serving on `url` from a thread, its `devnet` what the tests drive."""

    @property
    def devnet(self) -> Devnet:
        return self.server.state


def start(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    api_key: str | None = None,
    verbose: bool = False,
    devnet: Devnet | None = None,
) -> Running:
    """A fresh devnet (genesis) on `port` (0: a free one), served from a daemon thread."""
    server = DevnetServer(devnet or Devnet(), Handler, host, port, api_key=api_key, verbose=verbose)
    return Running.serve(server, name="solana-devnet")
