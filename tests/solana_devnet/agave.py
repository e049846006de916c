"""Reading the devnet's answers back with solders' parsers, which are serde's of Agave's own response types
(rpc-client-api, transaction-status): an answer they take is in Agave's shape, field names and nesting
included; one they refuse is not."""

from __future__ import annotations

import json
from typing import Any

import solders.rpc.errors as errors
import solders.rpc.responses as responses

# Every error type solders reads an error object into (InvalidParamsMessage, RpcCustomErrorFieldless...).
ERRORS = tuple(
    value for name, value in vars(errors).items() if isinstance(value, type) and not name.startswith("_")
)


def parsed(answer: dict[str, Any], response: str) -> Any:
    """`answer` (a whole JSON-RPC response) read as solders' `response` type (e.g. "GetTransactionResp");
    the answer must be a result, read without loss."""
    value = getattr(responses, response).from_json(json.dumps(answer))
    assert not isinstance(value, ERRORS), value
    return value


def parsed_error(answer: dict[str, Any], response: str) -> Any:
    """An error answer read as solders reads Agave's error objects (a *Message type)."""
    value = getattr(responses, response).from_json(json.dumps(answer))
    assert isinstance(value, ERRORS), value
    return value
