"""Agave's error objects: JSON-RPC errors with its codes (rpc-client-api custom_error.rs and jsonrpc-core's),
and the text of a TransactionError as its Display writes it (solana-transaction-error), which
sendTransaction's preflight failure puts in its message."""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SEND_TRANSACTION_PREFLIGHT_FAILURE = -32002
TRANSACTION_SIGNATURE_VERIFICATION_FAILURE = -32003
UNSUPPORTED_TRANSACTION_VERSION = -32015
MIN_CONTEXT_SLOT_NOT_REACHED = -32016


class RpcError(Exception):
    """A JSON-RPC error object: `{"code", "message"}` and `data` when Agave sends one."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def invalid_params(message: str) -> RpcError:
    return RpcError(INVALID_PARAMS, message)


# TransactionError's Display (thiserror) for the errors a payment can meet.
TRANSACTION_ERRORS = {
    "AccountInUse": "Account in use",
    "AccountLoadedTwice": "Account loaded twice",
    "AccountNotFound": "Attempt to debit an account but found no record of a prior credit.",
    "ProgramAccountNotFound": "Attempt to load a program that does not exist",
    "InsufficientFundsForFee": "Insufficient funds for fee",
    "InvalidAccountForFee": "This account may not be used to pay transaction fees",
    "AlreadyProcessed": "This transaction has already been processed",
    "BlockhashNotFound": "Blockhash not found",
    "CallChainTooDeep": "Loader call chain is too deep",
    "MissingSignatureForFee": "Transaction requires a fee but has no signature present",
    "InvalidAccountIndex": "Transaction contains an invalid account reference",
    "SignatureFailure": "Transaction did not pass signature verification",
    "InvalidProgramForExecution": "This program may not be used for executing instructions",
    "SanitizeFailure": "Transaction failed to sanitize accounts offsets correctly",
    "WouldExceedMaxBlockCostLimit": "Transaction would exceed max Block Cost Limit",
    "UnsupportedVersion": "Transaction version is unsupported",
    "InvalidWritableAccount": "Transaction loads a writable account that cannot be written",
}

# InstructionError's Display (solana-instruction) for the usual ones; Custom is formatted below.
INSTRUCTION_ERRORS = {
    "GenericError": "generic instruction error",
    "InvalidArgument": "invalid program argument",
    "InvalidInstructionData": "invalid instruction data",
    "InvalidAccountData": "invalid account data for instruction",
    "AccountDataTooSmall": "account data too small for instruction",
    "InsufficientFunds": "insufficient funds for instruction",
    "IncorrectProgramId": "incorrect program id for instruction",
    "MissingRequiredSignature": "missing required signature for instruction",
    "AccountAlreadyInitialized": "instruction requires an uninitialized account",
    "UninitializedAccount": "instruction requires an initialized account",
    "ExternalAccountLamportSpend": "instruction spent from the balance of an account it does not own",
    "ReadonlyLamportChange": "instruction changed the balance of a read-only account",
    "ProgramFailedToComplete": "Program failed to complete",
    "ComputationalBudgetExceeded": "Computational budget exceeded",
}


def transaction_error_text(err: Any) -> str:
    """`err` (TransactionError as Agave's JSON writes it) as its Display writes it."""
    if isinstance(err, str):
        return TRANSACTION_ERRORS.get(err, err)
    if isinstance(err, dict) and len(err) == 1:
        ((name, value),) = err.items()
        if name == "InstructionError":
            index, inner = value
            return f"Error processing Instruction {index}: {_instruction_error_text(inner)}"
        if name == "InsufficientFundsForRent":
            return (
                f"Transaction results in an account ({value['account_index']}) with insufficient funds "
                "for rent"
            )
        if name == "DuplicateInstruction":
            return f"Transaction contains a duplicate instruction ({value}) that is not allowed"
    return str(err)


def _instruction_error_text(inner: Any) -> str:
    if isinstance(inner, dict) and "Custom" in inner:
        return f"custom program error: {inner['Custom']:#x}"
    if isinstance(inner, str):
        return INSTRUCTION_ERRORS.get(inner, inner)
    return str(inner)
