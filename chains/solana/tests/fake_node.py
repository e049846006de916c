"""A fake HTTP layer for the Solana client (chains.solana.node): answers each JSON-RPC method with what a
test set (a result, a whole response body, raw text, an HTTP status or an exception), echoing the
request's id unless told otherwise, and remembers every request."""

from __future__ import annotations

import json
from typing import Any

import requests
from requests.adapters import BaseAdapter

from chains.solana.node import SolanaNode

URL = "https://solana.test/rpc"


class FakeRpc(BaseAdapter):
    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[str, tuple[int, Any, bool]] = {}
        self.sent: list[tuple[requests.PreparedRequest, dict[str, Any]]] = []

    def result(self, method: str, result: Any) -> None:
        """`method` answers {"jsonrpc": "2.0", "result": result, "id": <the request's>}."""
        self.routes[method] = (200, {"jsonrpc": "2.0", "result": result}, True)

    def body(self, method: str, body: Any, *, status: int = 200, echo_id: bool = True) -> None:
        """`method` answers `body` (a JSON value, raw text, or an exception to raise) with `status`; the
        request's id is set in a JSON object body unless `echo_id` is False."""
        self.routes[method] = (status, body, echo_id)

    def request(self, index: int = -1) -> dict[str, Any]:
        return json.loads(self.sent[index][0].body or b"null")  # type: ignore[no-any-return]

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.sent.append((request, kwargs))
        call = json.loads(request.body or b"null")
        status, body, echo_id = self.routes[call["method"]]
        if isinstance(body, Exception):
            raise body
        if isinstance(body, dict) and echo_id:
            body = {**body, "id": call["id"]}
        response = requests.Response()
        response.status_code = status
        response._content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        response.url = str(request.url)
        response.request = request
        return response

    def close(self) -> None:
        pass


def solana_node(rpc: FakeRpc, **options: Any) -> SolanaNode:
    session = requests.Session()
    session.mount("https://", rpc)
    return SolanaNode(URL, session=session, **options)
