"""One JSON-RPC 2.0 call over HTTP, for the node clients that speak it (chains.solana.node, chains.near.node):
the transport and the envelope, never the method's meaning.

One POST per call with an id checked on the way back; the answer read with the size and depth limits of
chains.answers and its numbers parsed exactly (a fraction is never a binary float). Whatever says nothing
about the call itself (unreachable, timed out, rate limited, a refused API key, HTTP 5xx, not JSON-RPC) is
`unavailable` (the family's ChainUnavailable: wait and ask again); a JSON-RPC answer out of shape (an error
that is no object, another request's id, neither result nor error) is `malformed`, the family's subclass of
it when it tells the two apart; an error object goes to the family's `error` reader, which knows what its
node's codes mean. A URL is shown without its path or query, which may carry a provider's key.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import requests

from chains.answers import limited_session
from chains.base import ChainUnavailable

CONNECT_TIMEOUT_SECONDS = 3
READ_TIMEOUT_SECONDS = 15


class JsonRpcClient:
    """An endpoint at `url`; `headers` go with every call (a provider's API key). `unavailable` is raised
    when the call could not be made or read, `malformed` (default: `unavailable`) when the answer is
    JSON-RPC out of shape; `error(method, error_object)` returns the exception for an error answer.
    `answer_statuses`: the HTTP statuses whose body is read as an answer, when the node writes its answers
    with those only (Agave: 200), so that a proxy's refusal in JSON-RPC clothes is never taken for the
    node's; None reads any (nearcore answers its errors with 400, 408, 500)."""

    def __init__(
        self,
        url: str,
        *,
        unavailable: type[ChainUnavailable],
        error: Callable[[str, dict[str, Any]], Exception],
        malformed: type[ChainUnavailable] | None = None,
        answer_statuses: frozenset[int] | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = READ_TIMEOUT_SECONDS,
        session: requests.Session | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("a node's url is http(s)://host:port")
        self.url = url
        self._unavailable = unavailable
        self._malformed = malformed or unavailable
        self._answer_statuses = answer_statuses
        self._error = error
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        self._timeout = (CONNECT_TIMEOUT_SECONDS, timeout)
        self._session = session or limited_session()  # answers capped in size and depth (chains.answers)
        self._ids = itertools.count(1)

    def call(self, method: str, params: Any) -> Any:
        """The `result` of `method(params)`, or the family's exception for its error."""
        request_id = next(self._ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        where = f"{self.shown_url()}: {method}"
        try:
            response = self._session.post(
                self.url, data=json.dumps(body).encode(), headers=self._headers, timeout=self._timeout
            )
        except requests.RequestException as exc:
            raise self._unavailable(f"{where}: {type(exc).__name__}") from exc
        status = response.status_code
        if status == 429:
            raise self._unavailable(f"{where}: rate limited (HTTP 429)")
        if status in (401, 403):
            raise self._unavailable(f"{where}: HTTP {status}: the node refused the request (its API key?)")
        if self._answer_statuses is not None and status not in self._answer_statuses:
            raise self._unavailable(f"{where}: HTTP {status}")
        try:
            answer = json.loads(response.content, parse_float=Decimal)
        except ValueError:  # an HTML error page of a proxy, an empty body
            raise self._unavailable(f"{where}: HTTP {status}, not JSON") from None
        if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0":
            raise self._unavailable(f"{where}: not a JSON-RPC 2.0 response")
        if "error" in answer:
            error = answer["error"]
            if not isinstance(error, dict):
                raise self._malformed(f"{where}: an error that is not a JSON-RPC error object")
            raise self._error(method, error)
        if status != 200:
            raise self._unavailable(f"{where}: HTTP {status}")
        if answer.get("id") != request_id:
            raise self._malformed(f"{where}: the answer is to request {answer.get('id')!r}, not {request_id}")
        if "result" not in answer:
            raise self._malformed(f"{where}: neither a result nor an error")
        return answer["result"]

    def shown_url(self) -> str:
        """The url without its path or query, which may carry a provider's key."""
        scheme, _, rest = self.url.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0]}"
