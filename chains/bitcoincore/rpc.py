"""A JSON-RPC client for Bitcoin Core-compatible nodes (bitcoind, litecoind, Bitcoin Cash Node).

Amounts arrive exactly: the answer is parsed with `parse_float=Decimal`, so a float never touches money.
Errors are told apart the way a caller must act on them:
- `NodeUnavailable`: the node could not be reached or did not answer with JSON-RPC (refused, timed out,
  an HTML proxy page, a 401). Ingestion and payouts pause and retry later; nothing was done.
- `RpcError`: the node answered and refused the call, with its own code (e.g. -5 invalid address, -6
  insufficient funds, -18 wallet not loaded, -26 rejected, -27 already in the chain). The caller decides.
The URL carries the credentials (`http://user:pass@host:port`); they never appear in an error or a log.
"""

from __future__ import annotations

import itertools
import json
from decimal import Decimal
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import requests

from chains.answers import limited_session
from chains.base import ChainUnavailable
from core import jsonutil

CONNECT_TIMEOUT_SECONDS = 3
SATOSHI = Decimal("0.00000001")  # amounts in answers and calls have at most 8 places

# The error codes Kassa acts on (Bitcoin Core's src/rpc/protocol.h).
RPC_INVALID_ADDRESS_OR_KEY = -5  # also: "Invalid or non-wallet transaction id", "Transaction not in mempool"
RPC_WALLET_ERROR = -4
RPC_WALLET_INSUFFICIENT_FUNDS = -6
RPC_WALLET_UNLOCK_NEEDED = -13
RPC_WALLET_NOT_FOUND = -18
RPC_VERIFY_REJECTED = -26
RPC_VERIFY_ALREADY_IN_CHAIN = -27
RPC_VERIFY_ERROR = -25

READ_TIMEOUT_SECONDS = 30
_ids = itertools.count(1)


class NodeUnavailable(ChainUnavailable):
    """The node could not be reached, or answered with something that is not JSON-RPC."""


class RpcError(Exception):
    """The node answered the call with an error."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {message} (code {code})")
        self.method = method
        self.code = code
        self.message = message


class RpcClient:
    """Calls on one node; `wallet(name)` gives a client whose calls go to that wallet (`/wallet/<name>`)."""

    def __init__(self, url: str, *, session: requests.Session | None = None, timeout: float | None = None):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("a node URL is http(s)://user:password@host:port")
        self._auth = (parts.username or "", parts.password or "") if parts.username else None
        netloc = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
        if ":" in parts.hostname:  # an IPv6 literal keeps its brackets
            netloc = f"[{parts.hostname}]" + (f":{parts.port}" if parts.port else "")
        self._base = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        self._session = session or limited_session()  # answers capped in size and depth (chains.answers)
        self._timeout = (CONNECT_TIMEOUT_SECONDS, timeout or READ_TIMEOUT_SECONDS)
        self.endpoint = self._base

    @property
    def shown(self) -> str:
        """The node's address without credentials, for logs and errors."""
        return self._base

    def wallet(self, name: str) -> RpcClient:
        client = RpcClient.__new__(RpcClient)
        client._auth, client._base, client._session, client._timeout = (
            self._auth,
            self._base,
            self._session,
            self._timeout,
        )
        client.endpoint = f"{self._base}/wallet/{quote(name, safe='')}"
        return client

    def call(self, method: str, *params: Any) -> Any:
        # Decimal params go out as JSON numbers written from their exact digits (core.jsonutil).
        body = jsonutil.dumps({"jsonrpc": "1.0", "id": next(_ids), "method": method, "params": list(params)})
        try:
            response = self._session.post(
                self.endpoint,
                data=body.encode(),
                auth=self._auth,
                headers={"Content-Type": "application/json"},
                timeout=self._timeout,
            )
        except requests.RequestException as exc:
            raise NodeUnavailable(f"{self.shown}: {type(exc).__name__}") from exc
        try:
            answer = json.loads(response.content, parse_float=Decimal)
        except ValueError as exc:
            raise NodeUnavailable(f"{self.shown}: HTTP {response.status_code}, not JSON-RPC") from exc
        if not isinstance(answer, dict) or ("result" not in answer and "error" not in answer):
            raise NodeUnavailable(f"{self.shown}: HTTP {response.status_code}, not JSON-RPC")
        error = answer.get("error")
        if error:
            code = error.get("code", 0) if isinstance(error, dict) else 0
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            raise RpcError(method, int(code), str(message))
        return answer.get("result")
