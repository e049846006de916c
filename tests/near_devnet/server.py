"""The devnet's HTTP server: JSON-RPC 2.0 on `POST /` (one request a body; nearcore serves no batches), and
the controls under `/devnet/` (their own JSON, HTTP 400 on a bad request). HTTP statuses as nearcore's
RPC: 200 for a result or a HANDLER_ERROR, 408 for TIMEOUT_ERROR, 400 for a REQUEST_VALIDATION_ERROR,
500 for an INTERNAL_ERROR. With `api_key`, every request must carry it in `x-api-key` (else HTTP 401, as
a provider answers a missing key)."""

from __future__ import annotations

import json
import traceback
from typing import Any
from urllib.parse import unquote, urlsplit

from tests import devnet_server
from tests.devnet_server import API_KEY_HEADER as API_KEY_HEADER  # the fixtures' and __main__'s
from tests.devnet_server import DevnetServer, JsonHandler
from tests.near_devnet import controls
from tests.near_devnet.chain import Chain
from tests.near_devnet.errors import RpcError, internal, method_not_found, parse_error
from tests.near_devnet.rpc import METHODS


def answer_rpc(chain: Chain, body: bytes) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON-RPC answer) for one request body."""
    try:
        request = json.loads(body)
    except ValueError as exc:
        return _error(None, parse_error(f"Failed to parse the request: {exc}"))
    if not isinstance(request, dict):
        return _error(None, parse_error("The request is one JSON object (batches are not served)"))
    request_id = request.get("id")
    name = request.get("method")
    if request.get("jsonrpc") != "2.0" or not isinstance(name, str):
        return _error(request_id, parse_error('The request has jsonrpc "2.0" and a method'))
    handler = METHODS.get(name)
    if handler is None:
        return _error(request_id, method_not_found(name))
    try:
        with chain.lock:  # one request at a time sees and changes the chain
            result = handler(chain, request.get("params"))
    except RpcError as exc:
        return _error(request_id, exc)
    except Exception as exc:  # a devnet bug: said as an internal error, with what went wrong
        traceback.print_exc()
        return _error(request_id, internal(f"{type(exc).__name__}: {exc}"))
    return 200, {"jsonrpc": "2.0", "result": result, "id": request_id}


def _error(request_id: Any, error: RpcError) -> tuple[int, dict[str, Any]]:
    status = {"REQUEST_VALIDATION_ERROR": 400, "INTERNAL_ERROR": 500}.get(error.name, 200)
    if error.cause == "TIMEOUT_ERROR":
        status = 408
    return status, {"jsonrpc": "2.0", "error": error.to_json(), "id": request_id}


class Handler(JsonHandler[Chain]):
    disable_nagle_algorithm = True  # else each small answer waits ~40 ms for a delayed ACK

    def do_GET(self) -> None:
        if not self._authorized():
            return
        path = urlsplit(self.path).path.strip("/")
        chain = self.server.state
        with chain.lock:
            if path == "devnet/info":
                self._send(200, controls.info(chain))
            elif path.startswith("devnet/balance/"):
                self._send(200, controls.balance(chain, unquote(path.removeprefix("devnet/balance/"))))
            else:
                self._send(405 if path == "" else 404, {"error": f"GET /{path}: use POST / for JSON-RPC"})

    def do_POST(self) -> None:
        body = self._body()
        if not self._authorized():
            return
        path = urlsplit(self.path).path.strip("/")
        if path == "":
            self._send(*answer_rpc(self.server.state, body))
        else:
            self._control(path, body, controls.CONTROLS)


class Running(devnet_server.Running[Chain]):
    """A NEAR devnet serving on `url` from a thread, its `chain` what the tests drive."""

    @property
    def chain(self) -> Chain:
        return self.server.state


def start(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    api_key: str | None = None,
    verbose: bool = False,
    chain: Chain | None = None,
    validity: int | None = None,
) -> Running:
    """A fresh devnet (genesis) on `port` (0: a free one), served from a daemon thread."""
    if chain is None:
        chain = Chain() if validity is None else Chain(validity=validity)
    server = DevnetServer(chain, Handler, host, port, api_key=api_key, verbose=verbose)
    return Running.serve(server, name="near-devnet")
