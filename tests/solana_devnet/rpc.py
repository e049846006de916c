"""The JSON-RPC methods: each takes the request's positional `params` and answers the `result`, in Agave's
shapes (rpc-client-api's Rpc* types and transaction-status's Ui* types, as serde writes them), or raises
RpcError with Agave's code and message. The server holds the devnet's lock around each call."""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import Callable
from typing import Any

from bip_utils import Base58Decoder, Base58Encoder
from solders.message import MessageV0, from_bytes_versioned
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from tests.solana_devnet.errors import (
    MIN_CONTEXT_SLOT_NOT_REACHED,
    UNSUPPORTED_TRANSACTION_VERSION,
    RpcError,
    invalid_params,
)
from tests.solana_devnet.node import (
    COMMITMENTS,
    PRIORITIZATION_FEE_SLOTS,
    STATUS_CACHE_SLOTS,
    Devnet,
    Dropped,
    Record,
)

API_VERSION = "2.3.6"
MAX_SIGNATURES_FOR_ADDRESS = 1_000
MAX_SIGNATURE_STATUSES = 256
MAX_PRIORITIZATION_ADDRESSES = 128
PACKET_DATA_SIZE = 1_232  # the most a transaction's wire bytes may be
MAX_BASE58_SIZE = 1_683  # ...written in base58
MAX_BASE64_SIZE = 1_644  # ...written in base64
TRANSACTION_TYPE = "solana_transaction::versioned::VersionedTransaction"
MESSAGE_TYPE = "solana_message::versioned::VersionedMessage"

Method = Callable[[Devnet, list[Any]], Any]
METHODS: dict[str, Method] = {}


def method(name: str) -> Callable[[Method], Method]:
    def register(handler: Method) -> Method:
        METHODS[name] = handler
        return handler

    return register


# --- params -------------------------------------------------------------------------------------------


def _arg(params: list[Any], index: int, what: str) -> Any:
    if len(params) <= index:
        raise invalid_params(f"Invalid params: invalid length {len(params)}, expected {what}.")
    return params[index]


def _config(params: list[Any], index: int) -> dict[str, Any]:
    value = params[index] if len(params) > index else None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_params(
            f"Invalid params: invalid type: {_kind(value)}, expected a configuration object."
        )
    return value


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    return {list: "sequence", dict: "map"}.get(type(value), "a value")


def _commitment(config: dict[str, Any], *, at_least_confirmed: bool = False) -> str:
    commitment = config.get("commitment", "finalized")
    if commitment not in COMMITMENTS:
        raise invalid_params(
            f"Invalid params: unknown variant `{commitment}`, expected one of `processed`, `confirmed`, "
            "`finalized`."
        )
    if at_least_confirmed and commitment == "processed":
        raise invalid_params("Method does not support commitment below `confirmed`")
    return str(commitment)


def _bank(devnet: Devnet, config: dict[str, Any], *, at_least_confirmed: bool = False) -> int:
    """The slot of the bank answering, once it has reached `minContextSlot`."""
    bank = devnet.bank_slot(_commitment(config, at_least_confirmed=at_least_confirmed))
    wanted = config.get("minContextSlot")
    if wanted is not None:
        if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 0:
            raise invalid_params(f"Invalid params: invalid type: {_kind(wanted)}, expected u64.")
        if bank < wanted:
            raise RpcError(
                MIN_CONTEXT_SLOT_NOT_REACHED,
                "Minimum context slot has not been reached",
                {"contextSlot": bank},
            )
    return bank


def _context(slot: int) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "slot": slot}


def _base58(text: Any, size: int) -> bytes:
    """`text` as the base58 of `size` bytes, else Agave's "Invalid param: Invalid" / "WrongSize"."""
    if not isinstance(text, str):
        raise invalid_params(f"Invalid params: invalid type: {_kind(text)}, expected a string.")
    try:
        data = Base58Decoder.Decode(text)
    except (ValueError, KeyError):
        raise invalid_params("Invalid param: Invalid") from None
    if len(data) != size:
        raise invalid_params("Invalid param: WrongSize")
    return data


def _pubkey(text: Any) -> Pubkey:
    return Pubkey(_base58(text, 32))


def _signature(text: Any) -> str:
    _base58(text, 64)
    return str(text)


def _limit(config: dict[str, Any]) -> int:
    limit = config.get("limit", MAX_SIGNATURES_FOR_ADDRESS)
    if limit is None:
        limit = MAX_SIGNATURES_FOR_ADDRESS
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise invalid_params(f"Invalid params: invalid type: {_kind(limit)}, expected usize.")
    if limit == 0 or limit > MAX_SIGNATURES_FOR_ADDRESS:
        raise invalid_params(f"Invalid limit; max {MAX_SIGNATURES_FOR_ADDRESS}")
    return limit


def _decode(encoded: Any, encoding: str, what: str) -> bytes:
    """Agave's decode_and_deserialize: the size limits, then the encoding."""
    if not isinstance(encoded, str):
        raise invalid_params(f"Invalid params: invalid type: {_kind(encoded)}, expected a string.")
    if encoding == "base58":
        if len(encoded) > MAX_BASE58_SIZE:
            raise invalid_params(
                f"base58 encoded {what} too large: {len(encoded)} bytes (max: encoded/raw "
                f"{MAX_BASE58_SIZE}/{PACKET_DATA_SIZE})"
            )
        try:
            data = Base58Decoder.Decode(encoded)
        except (ValueError, KeyError) as exc:
            raise invalid_params(f"invalid base58 encoding: {exc}") from None
    elif encoding == "base64":
        if len(encoded) > MAX_BASE64_SIZE:
            raise invalid_params(
                f"base64 encoded {what} too large: {len(encoded)} bytes (max: encoded/raw "
                f"{MAX_BASE64_SIZE}/{PACKET_DATA_SIZE})"
            )
        try:
            data = base64.b64decode(encoded, validate=True)
        except binascii.Error as exc:
            raise invalid_params(f"invalid base64 encoding: {exc}") from None
    else:
        raise invalid_params(f"Invalid params: unknown variant `{encoding}`, expected `base58` or `base64`.")
    if len(data) > PACKET_DATA_SIZE:
        raise invalid_params(f"decoded {what} too large: {len(data)} bytes (max: {PACKET_DATA_SIZE} bytes)")
    return data


# --- slots and blockhashes ----------------------------------------------------------------------------


@method("getSlot")
def get_slot(devnet: Devnet, params: list[Any]) -> Any:
    return _bank(devnet, _config(params, 0))


@method("getBlockHeight")
def get_block_height(devnet: Devnet, params: list[Any]) -> Any:
    return devnet.height(_bank(devnet, _config(params, 0)))


@method("getLatestBlockhash")
def get_latest_blockhash(devnet: Devnet, params: list[Any]) -> Any:
    config = _config(params, 0)
    bank = _bank(devnet, config)
    blockhash, last_valid = devnet.latest_blockhash(_commitment(config))
    return {
        "context": _context(bank),
        "value": {"blockhash": str(blockhash), "lastValidBlockHeight": last_valid},
    }


@method("getBalance")
def get_balance(devnet: Devnet, params: list[Any]) -> Any:
    address = _pubkey(_arg(params, 0, "at least 1 element"))
    bank = _bank(devnet, _config(params, 1))
    return {"context": _context(bank), "value": devnet.balance(address, bank)}


# --- history ------------------------------------------------------------------------------------------


@method("getSignaturesForAddress")
def get_signatures_for_address(devnet: Devnet, params: list[Any]) -> Any:
    address = _pubkey(_arg(params, 0, "at least 1 element"))
    config = _config(params, 1)
    before = None if config.get("before") is None else _signature(config["before"])
    until = None if config.get("until") is None else _signature(config["until"])
    limit = _limit(config)
    bank = _bank(devnet, config, at_least_confirmed=True)
    records = devnet.records_for(address, bank)
    if before is not None:
        # Agave's blockstore: an unknown `before` finds nothing; an unknown `until` bounds nothing.
        at = next((i for i, r in enumerate(records) if r.signature == before), None)
        records = [] if at is None else records[at + 1 :]
    if until is not None:
        at = next((i for i, r in enumerate(records) if r.signature == until), None)
        records = records if at is None else records[:at]
    return [
        {
            "signature": record.signature,
            "slot": record.slot,
            "err": record.err,
            "memo": record.memo,
            "blockTime": devnet.slot_time(record.slot),
            "confirmationStatus": devnet.commitment_of(record),
        }
        for record in records[:limit]
    ]


@method("getTransaction")
def get_transaction(devnet: Devnet, params: list[Any]) -> Any:
    signature = _signature(_arg(params, 0, "at least 1 element"))
    raw_config = params[1] if len(params) > 1 else None
    config = {"encoding": raw_config} if isinstance(raw_config, str) else _config(params, 1)
    encoding = config.get("encoding") or "json"
    if encoding not in ("json", "base64", "base58"):
        if encoding == "jsonParsed":
            raise invalid_params(
                "Invalid params: devnet: jsonParsed is not served (json, base64, base58 are)."
            )
        raise invalid_params(
            f"Invalid params: unknown variant `{encoding}`, expected one of `binary`, `base64`, `base58`, "
            "`json`, `jsonParsed`."
        )
    max_version = config.get("maxSupportedTransactionVersion")
    if max_version is not None and (not isinstance(max_version, int) or isinstance(max_version, bool)):
        raise invalid_params(f"Invalid params: invalid type: {_kind(max_version)}, expected u8.")
    bank = _bank(devnet, config, at_least_confirmed=True)
    record = devnet.by_signature.get(signature)
    if record is None or record.slot > bank:
        return None
    is_v0 = isinstance(record.transaction.message, MessageV0)
    if is_v0 and (max_version is None or max_version < 0):
        raise RpcError(
            UNSUPPORTED_TRANSACTION_VERSION,
            "Transaction version (0) is not supported by the requesting client. Please try the request "
            'again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
        )
    answer: dict[str, Any] = {
        "slot": record.slot,
        "blockTime": devnet.slot_time(record.slot),
        "meta": meta_json(record),
        "transaction": transaction_json(record, encoding),
    }
    if max_version is not None:
        answer["version"] = 0 if is_v0 else "legacy"
    return answer


def meta_json(record: Record) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "err": record.err,
        "status": {"Ok": None} if record.err is None else {"Err": record.err},
        "fee": record.fee,
        "preBalances": record.pre_balances,
        "postBalances": record.post_balances,
        "innerInstructions": record.inner_instructions,
        "logMessages": record.logs,
        "preTokenBalances": [],
        "postTokenBalances": [],
        "rewards": [],
        "loadedAddresses": {"writable": [], "readonly": []},
        "computeUnitsConsumed": record.units_consumed,
    }
    if record.return_data is not None:
        meta["returnData"] = record.return_data
    return meta


def transaction_json(record: Record, encoding: str) -> Any:
    transaction = record.transaction
    if encoding == "base64":
        return [base64.b64encode(bytes(transaction)).decode(), "base64"]
    if encoding == "base58":
        return [Base58Encoder.Encode(bytes(transaction)), "base58"]
    message = transaction.message
    keys = list(message.account_keys)
    ui_message: dict[str, Any] = {
        "header": {
            "numRequiredSignatures": message.header.num_required_signatures,
            "numReadonlySignedAccounts": message.header.num_readonly_signed_accounts,
            "numReadonlyUnsignedAccounts": message.header.num_readonly_unsigned_accounts,
        },
        "accountKeys": [str(key) for key in keys],
        "recentBlockhash": str(message.recent_blockhash),
        "instructions": [
            {
                "programIdIndex": instruction.program_id_index,
                "accounts": list(bytes(instruction.accounts)),
                "data": Base58Encoder.Encode(bytes(instruction.data)),
                "stackHeight": None,
            }
            for instruction in message.instructions
        ],
    }
    if isinstance(message, MessageV0):
        ui_message["addressTableLookups"] = []
    return {"signatures": [str(s) for s in transaction.signatures], "message": ui_message}


@method("getSignatureStatuses")
def get_signature_statuses(devnet: Devnet, params: list[Any]) -> Any:
    signatures = _arg(params, 0, "at least 1 element")
    if not isinstance(signatures, list):
        raise invalid_params(f"Invalid params: invalid type: {_kind(signatures)}, expected a sequence.")
    if len(signatures) > MAX_SIGNATURE_STATUSES:
        raise invalid_params(f"Too many inputs provided; max {MAX_SIGNATURE_STATUSES}")
    search_history = bool(_config(params, 1).get("searchTransactionHistory", False))
    statuses = []
    for text in signatures:
        record = devnet.by_signature.get(_signature(text))
        in_cache = record is not None and record.slot > devnet.head - STATUS_CACHE_SLOTS
        if record is None or not (in_cache or (search_history and record.slot <= devnet.head)):
            statuses.append(None)
            continue
        commitment = devnet.commitment_of(record)
        confirmations = {"processed": 0, "finalized": None}.get(commitment, devnet.head - record.slot + 1)
        statuses.append(
            {
                "slot": record.slot,
                "confirmations": confirmations,
                "status": {"Ok": None} if record.err is None else {"Err": record.err},
                "err": record.err,
                "confirmationStatus": commitment,
            }
        )
    return {"context": _context(devnet.working_slot), "value": statuses}


# --- sending and fees ---------------------------------------------------------------------------------


@method("sendTransaction")
def send_transaction(devnet: Devnet, params: list[Any]) -> Any:
    encoded = _arg(params, 0, "at least 1 element")
    config = _config(params, 1)
    encoding = config.get("encoding") or "base58"
    data = _decode(encoded, encoding, TRANSACTION_TYPE)
    try:
        transaction = VersionedTransaction.from_bytes(data)
    except ValueError as exc:
        raise invalid_params(f"failed to deserialize {TRANSACTION_TYPE}: {exc}") from None
    try:
        transaction.sanitize()
    except Exception as exc:  # solders raises its SanitizeError, not a ValueError
        raise invalid_params(f"invalid transaction: {exc}") from None
    preflight = _commitment({"commitment": config.get("preflightCommitment", "finalized")})
    if not config.get("skipPreflight", False):
        _bank(devnet, {**config, "commitment": preflight})
        devnet.preflight(transaction, preflight)
    # A transaction the working bank drops is dropped as a leader drops it: the client has its signature
    # and will never see it land.
    with contextlib.suppress(Dropped):
        devnet.execute(transaction)
    return str(transaction.signatures[0])


@method("getFeeForMessage")
def get_fee_for_message(devnet: Devnet, params: list[Any]) -> Any:
    encoded = _arg(params, 0, "at least 1 element")
    config = _config(params, 1)
    bank = _bank(devnet, config)
    data = _decode(encoded, "base64", MESSAGE_TYPE)
    try:
        message = from_bytes_versioned(data)
    except ValueError as exc:
        raise invalid_params(f"failed to deserialize {MESSAGE_TYPE}: {exc}") from None
    if not devnet.blockhash_valid(message.recent_blockhash, bank):
        return {"context": _context(bank), "value": None}
    return {"context": _context(bank), "value": devnet.fee(message)}


@method("getRecentPrioritizationFees")
def get_recent_prioritization_fees(devnet: Devnet, params: list[Any]) -> Any:
    raw = params[0] if params else None
    addresses = [] if raw is None else raw
    if not isinstance(addresses, list):
        raise invalid_params(f"Invalid params: invalid type: {_kind(addresses)}, expected a sequence.")
    if len(addresses) > MAX_PRIORITIZATION_ADDRESSES:
        raise invalid_params(f"Too many inputs provided; max {MAX_PRIORITIZATION_ADDRESSES}")
    keys = [_pubkey(address) for address in addresses]
    answer = []
    for slot in devnet.slot_records(devnet.head - PRIORITIZATION_FEE_SLOTS + 1, devnet.head):
        # Agave's cache: the slot's least compute-unit price, raised to each named writable account's least.
        prices = [record.unit_price for record in slot.records]
        fee = min(prices, default=0)
        for key in keys:
            locked = [record.unit_price for record in slot.records if key in record.writable_keys]
            if locked:
                fee = max(fee, min(locked))
        answer.append({"slot": slot.number, "prioritizationFee": fee})
    return answer
