"""A node's answer is read with limits before any parser sees it: at most `MAX_ANSWER_BYTES`, nested at
most `MAX_ANSWER_DEPTH` levels (core.jsonutil.refuse_deep, without recursion). A node that answers more
or deeper is treated as unreachable (`AnswerRefused`, a `requests.ConnectionError`), like any other
nonsense answer: it is logged by the caller and the scan or payout waits, and no worker is crashed by it.

Both node clients use it: the Bitcoin Core family's (chains.bitcoincore.rpc) and web3's HTTP provider for
EVM nodes (chains.evm.node), through a session with `LimitedAdapter` mounted.
"""

from __future__ import annotations

from typing import Any

import requests
from requests.adapters import HTTPAdapter

from core.jsonutil import refuse_deep

# A Bitcoin Core block with its transactions (getblock verbosity 2) is a few megabytes; a node log or an
# answer of hundreds of megabytes is not a node speaking JSON-RPC.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
# JSON-RPC answers nest a handful of levels (a block, its transactions, their outputs, a script's parts).
MAX_ANSWER_DEPTH = 64
_CHUNK = 256 * 1024


class AnswerRefused(requests.ConnectionError):
    """The node's answer is larger or deeper than a node's answer can be."""


class LimitedAdapter(HTTPAdapter):
    """Reads every answer in chunks up to the size limit and checks its nesting before it is handed on."""

    def __init__(self, *, max_bytes: int = MAX_ANSWER_BYTES, max_depth: int = MAX_ANSWER_DEPTH) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        kwargs["stream"] = True
        response = super().send(request, **kwargs)
        chunks, size = [], 0
        try:
            for chunk in response.iter_content(_CHUNK):
                size += len(chunk)
                if size > self.max_bytes:
                    raise AnswerRefused(
                        f"the node's answer is over {self.max_bytes} bytes", response=response
                    )
                chunks.append(chunk)
        finally:
            response.close()
        body = b"".join(chunks)
        try:
            refuse_deep(body, self.max_depth)
        except ValueError as exc:
            raise AnswerRefused(f"the node's answer: {exc}", response=response) from None
        response._content = body
        response._content_consumed = True  # type: ignore[attr-defined]
        return response


def limited_session(**limits: int) -> requests.Session:
    session = requests.Session()
    adapter = LimitedAdapter(**limits)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
