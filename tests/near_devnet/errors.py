"""NEAR's structured JSON-RPC errors, as nearcore writes them: {"name": HANDLER_ERROR |
REQUEST_VALIDATION_ERROR | INTERNAL_ERROR, "cause": {"name", "info"}, "code", "message", "data"}.

INVALID_TRANSACTION carries the InvalidTxError in `data` ({"TxExecutionError": {"InvalidTxError": ...}})
and an empty `cause.info`, as in the answer recorded in nearcore issue #6357; a client reads `data`."""

from __future__ import annotations

from typing import Any

SERVER_ERROR = -32000


class RpcError(Exception):
    def __init__(
        self,
        name: str,
        cause: str,
        info: dict[str, Any] | None = None,
        *,
        code: int = SERVER_ERROR,
        message: str = "Server error",
        data: Any = None,
    ) -> None:
        super().__init__(f"{name}/{cause}: {info}")
        self.name, self.cause, self.info = name, cause, info
        self.code, self.message, self.data = code, message, data

    def to_json(self) -> dict[str, Any]:
        cause: dict[str, Any] = {"name": self.cause}
        if self.info is not None:
            cause["info"] = self.info
        error: dict[str, Any] = {
            "name": self.name,
            "cause": cause,
            "code": self.code,
            "message": self.message,
        }
        if self.data is not None:
            error["data"] = self.data
        return error


def handler(cause: str, info: dict[str, Any] | None, data: Any = None) -> RpcError:
    return RpcError("HANDLER_ERROR", cause, info, data=data)


def parse_error(message: str) -> RpcError:
    return RpcError(
        "REQUEST_VALIDATION_ERROR",
        "PARSE_ERROR",
        {"error_message": message},
        code=-32700,
        message="Parse error",
        data=message,
    )


def method_not_found(method: str) -> RpcError:
    return RpcError(
        "REQUEST_VALIDATION_ERROR",
        "METHOD_NOT_FOUND",
        {"method_name": method},
        code=-32601,
        message="Method not found",
        data=method,
    )


def internal(message: str) -> RpcError:
    return RpcError("INTERNAL_ERROR", "INTERNAL_ERROR", {"error_message": message}, data=message)


def unknown_block(reference: Any) -> RpcError:
    return handler(
        "UNKNOWN_BLOCK", {}, data=f"DB Not Found Error: BLOCK HEIGHT: {reference} \n Cause: Unknown"
    )


def invalid_tx(error: dict[str, Any]) -> RpcError:
    return handler("INVALID_TRANSACTION", {}, data={"TxExecutionError": {"InvalidTxError": error}})


def timeout() -> RpcError:
    return handler("TIMEOUT_ERROR", None, data="Timeout")


def unknown_transaction(tx_hash: str) -> RpcError:
    return handler(
        "UNKNOWN_TRANSACTION",
        {"requested_transaction_hash": tx_hash},
        data=f"Transaction {tx_hash} doesn't exist",
    )
