"""What asking a Solana node can raise, told apart the way a caller acts on it.

- `SolanaNodeUnavailable` (a ChainUnavailable): the node could not be reached, timed out, was rate limited
  (HTTP 429), refused the API key (HTTP 401/403), failed (HTTP 5xx), or answered something that is not
  JSON-RPC. Nothing is known to have happened: wait and ask again.
  - `NodeAnswerError`: the node answered JSON-RPC, but not in the shape Agave writes (a float balance, a
    signature of the wrong size, balances that do not match the keys...). Treated as an outage.
  - `NodeBehind`: the node says it is behind (-32005 NodeUnhealthy, -32016 MinContextSlotNotReached,
    -32004 BlockNotAvailable, -32014 BlockStatusNotAvailableYet). Another try, later or elsewhere, may do.
  An internal error (-32603) or unreachable long-term storage (-32019) is unavailable too.
- `SolanaRpcError`: the node answered and refused the call, with Agave's `code`, `message` and `data`.
  - `InvalidParams` (-32602), `MethodNotFound` (-32601): the call is wrong (a bug or a provider that does
    not serve the method), not the chain.
  - `UnsupportedTransactionVersion` (-32015).
  - `SendTransactionError`: sendTransaction refused the transaction; it was not taken.
    - `SignatureVerificationFailure` (-32003).
    - `PreflightFailure` (-32002): the simulation failed; `err` is its TransactionError as Agave's JSON
      writes it ("BlockhashNotFound", {"InstructionError": [0, {"Custom": 1}]}...) and `logs` its logs.
      `BlockhashNotFound` and `AlreadyProcessed` are its two that a sender acts on: sign again with a new
      blockhash, or look the signature up (the node has it).
"""

from __future__ import annotations

from typing import Any

from chains.base import ChainUnavailable

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SEND_TRANSACTION_PREFLIGHT_FAILURE = -32002
TRANSACTION_SIGNATURE_VERIFICATION_FAILURE = -32003
BLOCK_NOT_AVAILABLE = -32004
NODE_UNHEALTHY = -32005
BLOCK_STATUS_NOT_AVAILABLE_YET = -32014
UNSUPPORTED_TRANSACTION_VERSION = -32015
MIN_CONTEXT_SLOT_NOT_REACHED = -32016
LONG_TERM_STORAGE_UNREACHABLE = -32019
BEHIND_CODES = frozenset(
    {NODE_UNHEALTHY, MIN_CONTEXT_SLOT_NOT_REACHED, BLOCK_NOT_AVAILABLE, BLOCK_STATUS_NOT_AVAILABLE_YET}
)


class SolanaNodeUnavailable(ChainUnavailable):
    """The node could not be asked, or did not answer as a Solana node does: try again later."""


class NodeAnswerError(SolanaNodeUnavailable):
    """The node answered, but not in a shape Agave writes."""


class NodeBehind(SolanaNodeUnavailable):
    """The node answered that it is behind the cluster or the slot asked for."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {code}: {message}")
        self.method, self.code, self.message = method, code, message


class SolanaRpcError(Exception):
    """The node refused the call with a JSON-RPC error object."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{method}: {code}: {message}")
        self.method, self.code, self.message, self.data = method, code, message, data


class InvalidParams(SolanaRpcError):
    """-32602: the call's params were refused."""


class MethodNotFound(SolanaRpcError):
    """-32601: the node does not serve the method."""


class UnsupportedTransactionVersion(SolanaRpcError):
    """-32015: the transaction is of a version the request did not allow."""


class SendTransactionError(SolanaRpcError):
    """sendTransaction refused the transaction: it was not taken."""


class SignatureVerificationFailure(SendTransactionError):
    """-32003: a signature does not verify."""


class PreflightFailure(SendTransactionError):
    """-32002: the preflight simulation failed with `err` (Agave's TransactionError JSON) and `logs`."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(method, code, message, data)
        details = data if isinstance(data, dict) else {}
        self.err: Any = details.get("err")
        logs = details.get("logs")
        self.logs: tuple[str, ...] = tuple(str(line) for line in logs) if isinstance(logs, list) else ()


class BlockhashNotFound(PreflightFailure):
    """The transaction's blockhash is unknown to the node (expired, or newer than the preflight bank)."""


class AlreadyProcessed(PreflightFailure):
    """The node has processed this very transaction already."""


def rpc_error(method: str, code: int, message: str, data: Any = None) -> Exception:
    """The exception of a JSON-RPC error object, by its code (and for -32002, by its `err`)."""
    if code in BEHIND_CODES:
        return NodeBehind(method, code, message)
    if code in (INTERNAL_ERROR, LONG_TERM_STORAGE_UNREACHABLE):
        return SolanaNodeUnavailable(f"{method}: {code}: {message}")
    if code == SEND_TRANSACTION_PREFLIGHT_FAILURE:
        err = data.get("err") if isinstance(data, dict) else None
        cls = {"BlockhashNotFound": BlockhashNotFound, "AlreadyProcessed": AlreadyProcessed}.get(
            err if isinstance(err, str) else "", PreflightFailure
        )
        return cls(method, code, message, data)
    known: dict[int, type[SolanaRpcError]] = {
        INVALID_PARAMS: InvalidParams,
        METHOD_NOT_FOUND: MethodNotFound,
        UNSUPPORTED_TRANSACTION_VERSION: UnsupportedTransactionVersion,
        TRANSACTION_SIGNATURE_VERIFICATION_FAILURE: SignatureVerificationFailure,
    }
    return known.get(code, SolanaRpcError)(method, code, message, data)
