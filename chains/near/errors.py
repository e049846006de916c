"""What asking a NEAR node can raise, told apart the way a caller acts on it.

NEAR's RPC answers an error as {"name": ..., "cause": {"name": ..., "info": {...}}, "code", "message",
"data"} (docs.near.org, RPC errors). The cause names Kassa acts on:
- UNKNOWN_BLOCK, UNKNOWN_CHUNK, UNKNOWN_ACCOUNT, UNKNOWN_ACCESS_KEY, UNKNOWN_TRANSACTION,
  UNKNOWN_TRANSACTION_OR_RECEIPT, NOT_CONFIRMED: "not there (yet)", which the node client answers as None;
- INVALID_TRANSACTION: `send_tx` refused the transaction (`NearTxRefused`, with the InvalidTxError kind:
  InvalidNonce, Expired, NotEnoughBalance...); it was not taken;
- anything else (TIMEOUT_ERROR, NO_SYNCED_BLOCKS, INTERNAL_ERROR, a request the node cannot parse): the
  node could not answer now (`NearNodeUnavailable`, a ChainUnavailable): wait and ask again.
"""

from __future__ import annotations

from typing import Any

from chains.base import ChainUnavailable

NOT_FOUND = frozenset(
    {
        "UNKNOWN_BLOCK",
        "UNKNOWN_CHUNK",
        "UNKNOWN_ACCOUNT",
        "UNKNOWN_ACCESS_KEY",
        "UNKNOWN_TRANSACTION",
        "UNKNOWN_TRANSACTION_OR_RECEIPT",
        "UNKNOWN_RECEIPT",
        "NOT_CONFIRMED",
        "GARBAGE_COLLECTED_BLOCK",
    }
)


class NearNodeUnavailable(ChainUnavailable):
    """The node could not be asked, or did not answer as a NEAR node does: try again later."""


class NodeAnswerError(NearNodeUnavailable):
    """The node answered, but not in a shape nearcore writes."""


class NearRpcError(Exception):
    """The node answered the call with an error: `cause` its name, `info` its details."""

    def __init__(self, method: str, cause: str, info: Any, message: str) -> None:
        super().__init__(f"{method}: {cause}: {message}")
        self.method, self.cause, self.info = method, cause, info


class NotFound(NearRpcError):
    """What was asked is not (yet, or no longer) known to the node."""


class NearTxRefused(NearRpcError):
    """`send_tx` refused the transaction for good as it is (`kind`: the InvalidTxError's name)."""

    @property
    def kind(self) -> str:
        invalid = _invalid_tx(self.info)
        if isinstance(invalid, dict) and invalid:
            return str(next(iter(invalid)))
        return str(invalid) if isinstance(invalid, str) else "InvalidTransaction"


def _invalid_tx(info: Any) -> Any:
    """The InvalidTxError of an INVALID_TRANSACTION error's details, wherever the node put it."""
    if isinstance(info, dict):
        if "InvalidTxError" in info:
            return info["InvalidTxError"]
        for value in info.values():
            found = _invalid_tx(value)
            if found is not None:
                return found
    return None


def rpc_error(method: str, error: dict[str, Any]) -> Exception:
    """The exception for `error`, the error object of an answer to `method`."""
    cause = error.get("cause")
    name = cause.get("name") if isinstance(cause, dict) else None
    info = cause.get("info") if isinstance(cause, dict) else None
    message = str(error.get("message") or error.get("name") or "error")
    data = error.get("data")
    if not isinstance(name, str):
        if _invalid_tx(cause) is not None:  # ServerError::TxExecutionError as its own cause (no name)
            return NearTxRefused(method, "INVALID_TRANSACTION", cause, message)
        return NearNodeUnavailable(f"{method}: {message}: {str(data)[:200]}")
    if name in NOT_FOUND:
        return NotFound(method, name, info, message)
    if name == "INVALID_TRANSACTION":
        return NearTxRefused(method, name, info if info else data, message)
    return NearNodeUnavailable(f"{method}: {name}: {message}")
