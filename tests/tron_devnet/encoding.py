"""TRON's wire forms, written for the devnet alone: base58check T-addresses, the protobuf of a transaction's
`raw_data` (only the fields and contract types the devnet serves), and java-tron's JSON for it.

Protobuf is written by hand: fields in number order, zero and empty values left out (proto3), as java-tron
and TronWeb serialize, so the bytes, and so the txid, are theirs (see test_encoding.py for published
vectors)."""

from __future__ import annotations

import hashlib
from typing import Any

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
PREFIX = 0x41
TYPE_URL = "type.googleapis.com/protocol."


class DecodeError(ValueError):
    pass


# --- addresses ----------------------------------------------------------------------------------------


def b58check_encode(payload: bytes) -> str:
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number = int.from_bytes(data, "big")
    text = ""
    while number:
        number, digit = divmod(number, 58)
        text = ALPHABET[digit] + text
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + text


def b58check_decode(text: str) -> bytes:
    number = 0
    for char in text:
        if char not in ALPHABET:
            raise DecodeError(f"not base58: {text!r}")
        number = number * 58 + ALPHABET.index(char)
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    data = b"\0" * (len(text) - len(text.lstrip("1"))) + body
    payload, check = data[:-4], data[-4:]
    if len(data) < 5 or hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] != check:
        raise DecodeError(f"bad base58check: {text!r}")
    return payload


def address_bytes(text: str) -> bytes:
    """21 bytes (0x41 + 20) from a T-address or its hex form (41..., as java-tron's visible=false)."""
    if not isinstance(text, str):
        raise DecodeError("address must be a string")
    if text.startswith("T"):
        raw = b58check_decode(text)
    else:
        try:
            raw = bytes.fromhex(text[2:] if text.startswith("0x") else text)
        except ValueError as exc:
            raise DecodeError(f"bad address: {text!r}") from exc
    if len(raw) != 21 or raw[0] != PREFIX:
        raise DecodeError(f"not a TRON address: {text!r}")
    return raw


def address_text(raw: bytes, *, visible: bool) -> str:
    return b58check_encode(raw) if visible else raw.hex()


def from_evm(evm: bytes) -> bytes:
    return bytes([PREFIX]) + evm


# --- protobuf -----------------------------------------------------------------------------------------

# name -> (field number, kind); kinds: int (varint), bytes, string, addr (bytes, an address in JSON),
# hex (bytes, hex in JSON), enum:<Name>, msg:<Name>, repeated msg:<Name>.
SCHEMAS: dict[str, dict[str, tuple[int, str]]] = {
    "raw": {
        "ref_block_bytes": (1, "hex"),
        "ref_block_num": (3, "int"),
        "ref_block_hash": (4, "hex"),
        "expiration": (8, "int"),
        "data": (10, "hex"),
        "contract": (11, "repeated msg:Contract"),
        "timestamp": (14, "int"),
        "fee_limit": (18, "int"),
    },
    "Contract": {"type": (1, "enum:ContractType"), "parameter": (2, "msg:Any"), "Permission_id": (5, "int")},
    "Any": {"type_url": (1, "string"), "value": (2, "bytes")},
    "AccountCreateContract": {
        "owner_address": (1, "addr"),
        "account_address": (2, "addr"),
        "type": (3, "enum:AccountType"),
    },
    "TransferContract": {"owner_address": (1, "addr"), "to_address": (2, "addr"), "amount": (3, "int")},
    "TriggerSmartContract": {
        "owner_address": (1, "addr"),
        "contract_address": (2, "addr"),
        "call_value": (3, "int"),
        "data": (4, "hex"),
        "call_token_value": (5, "int"),
        "token_id": (6, "int"),
    },
    "FreezeBalanceV2Contract": {
        "owner_address": (1, "addr"),
        "frozen_balance": (2, "int"),
        "resource": (3, "enum:ResourceCode"),
    },
    "DelegateResourceContract": {
        "owner_address": (1, "addr"),
        "resource": (2, "enum:ResourceCode"),
        "balance": (3, "int"),
        "receiver_address": (4, "addr"),
        "lock": (5, "int"),
        "lock_period": (6, "int"),
    },
    "UnDelegateResourceContract": {
        "owner_address": (1, "addr"),
        "resource": (2, "enum:ResourceCode"),
        "balance": (3, "int"),
        "receiver_address": (4, "addr"),
    },
}
ENUMS: dict[str, dict[str, int]] = {
    "ContractType": {
        "AccountCreateContract": 0,
        "TransferContract": 1,
        "TriggerSmartContract": 31,
        "FreezeBalanceV2Contract": 54,
        "DelegateResourceContract": 57,
        "UnDelegateResourceContract": 58,
    },
    "ResourceCode": {"BANDWIDTH": 0, "ENERGY": 1, "TRON_POWER": 2},
    "AccountType": {"Normal": 0, "AssetIssue": 1, "Contract": 2},
}
# Enum fields whose default (0, which proto3 never writes) the devnet reads as a value: a contract of type 0
# (AccountCreateContract) carries no type field at all.
DEFAULTS: dict[str, dict[str, str]] = {"Contract": {"type": "AccountCreateContract"}}


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 as protobuf writes it: ten bytes of two's complement
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise DecodeError("truncated varint")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return (value - (1 << 64) if value >= 1 << 63 else value), pos


def encode(message: dict[str, Any], schema: str) -> bytes:
    """A message given as python values (ints, bytes, str, enum names, dicts for sub-messages)."""
    out = bytearray()
    for name, (number, kind) in sorted(SCHEMAS[schema].items(), key=lambda item: item[1][0]):
        value = message.get(name)
        if value in (None, 0, b"", "", [], False):  # proto3 writes no default value
            continue
        values = value if kind.startswith("repeated ") else [value]
        kind = kind.removeprefix("repeated ")
        for item in values:
            if kind == "int" or kind.startswith("enum:"):
                number_value = ENUMS[kind[5:]][item] if kind.startswith("enum:") else int(item)
                if number_value:
                    out += _varint(number << 3) + _varint(number_value)
                continue
            if kind.startswith("msg:"):
                body = encode(item, kind[4:])
            elif kind == "string":
                body = item.encode()
            else:
                body = bytes(item)
            out += _varint(number << 3 | 2) + _varint(len(body)) + body
    return bytes(out)


def decode(data: bytes, schema: str) -> dict[str, Any]:
    fields = {number: (name, kind) for name, (number, kind) in SCHEMAS[schema].items()}
    message: dict[str, Any] = {}
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            if length < 0 or pos + length > len(data):
                raise DecodeError("truncated field")
            value, pos = data[pos : pos + length], pos + length
        else:
            raise DecodeError(f"wire type {wire} is not served here")
        if number not in fields:
            raise DecodeError(f"field {number} of {schema} is not served here")
        name, kind = fields[number]
        repeated = kind.startswith("repeated ")
        kind = kind.removeprefix("repeated ")
        if (wire == 0) != (kind == "int" or kind.startswith("enum:")):
            raise DecodeError(f"{schema}.{name}: wrong wire type")
        if kind.startswith("enum:"):
            names = {v: k for k, v in ENUMS[kind[5:]].items()}
            if value not in names:
                raise DecodeError(f"{schema}.{name}: unknown value {value}")
            value = names[value]
        elif kind.startswith("msg:"):
            value = decode(value, kind[4:])
        elif kind == "string":
            value = value.decode()
        if repeated:
            message.setdefault(name, []).append(value)
        else:
            message[name] = value
    return {**DEFAULTS.get(schema, {}), **message}


# --- transactions: raw bytes <-> python <-> java-tron JSON --------------------------------------------


def contract_type(raw: dict[str, Any]) -> str:
    [contract] = raw["contract"]
    return str(contract["type"])


def contract_value(raw: dict[str, Any]) -> dict[str, Any]:
    """The one contract's parameters (TRON runs one contract per transaction)."""
    [contract] = raw["contract"]
    kind = contract["type"]
    if contract["parameter"].get("type_url") != TYPE_URL + kind:
        raise DecodeError(f"type_url does not name {kind}")
    return decode(contract["parameter"].get("value", b""), kind)


def raw_encode(raw: dict[str, Any]) -> bytes:
    return encode(raw, "raw")


def raw_decode(data: bytes) -> dict[str, Any]:
    raw = decode(data, "raw")
    if len(raw.get("contract", [])) != 1:
        raise DecodeError("a transaction carries exactly one contract")
    contract_value(raw)
    return raw


def make_raw(kind: str, value: dict[str, Any], **fields: Any) -> dict[str, Any]:
    parameter = {"type_url": TYPE_URL + kind, "value": encode(value, kind)}
    return dict(fields, contract=[{"type": kind, "parameter": parameter}])


def _to_json(message: dict[str, Any], schema: str, visible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (_, kind) in SCHEMAS[schema].items():
        if name not in message:
            continue
        value = message[name]
        if kind == "addr":
            out[name] = address_text(value, visible=visible)
        elif kind in ("hex", "bytes"):
            out[name] = value.hex()
        elif kind == "int" and name == "lock":
            out[name] = bool(value)
        else:
            out[name] = value
    return out


def raw_to_json(raw: dict[str, Any], *, visible: bool) -> dict[str, Any]:
    """java-tron's JSON of raw_data: the contract's parameter value spelled out, bytes in hex."""
    out = _to_json(raw, "raw", visible)
    kind = contract_type(raw)
    value = _to_json(contract_value(raw), kind, visible)
    out["contract"] = [
        {
            "parameter": {"value": value, "type_url": TYPE_URL + kind},
            "type": kind,
            **{k: v for k, v in raw["contract"][0].items() if k == "Permission_id"},
        }
    ]
    return out


def _from_json(body: dict[str, Any], schema: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (_, kind) in SCHEMAS[schema].items():
        if name not in body:
            continue
        value = body[name]
        if kind == "addr":
            out[name] = address_bytes(value)
        elif kind in ("hex", "bytes"):
            out[name] = bytes.fromhex(value)
        elif kind == "int":
            out[name] = int(value)
        else:
            out[name] = value
    return out


def raw_from_json(body: dict[str, Any]) -> dict[str, Any]:
    """The python form of a JSON raw_data (either address form); raises DecodeError or ValueError."""
    raw = _from_json(body, "raw")
    [contract] = body["contract"]
    kind = contract["type"]
    if kind not in ENUMS["ContractType"]:
        raise DecodeError(f"contract type {kind} is not served here")
    parameter = contract["parameter"]
    value = _from_json(parameter["value"], kind)
    raw["contract"] = [
        {"type": kind, "parameter": {"type_url": parameter["type_url"], "value": encode(value, kind)}}
    ]
    return raw


def txid(raw_bytes: bytes) -> str:
    return hashlib.sha256(raw_bytes).hexdigest()


def transaction_json(
    raw_bytes: bytes, *, visible: bool, signatures: list[str] | None = None
) -> dict[str, Any]:
    """A transaction as java-tron answers it (createtransaction, gettransactionbyid without `ret`)."""
    tx: dict[str, Any] = {"visible": visible, "txID": txid(raw_bytes)}
    tx["raw_data"] = raw_to_json(raw_decode(raw_bytes), visible=visible)
    tx["raw_data_hex"] = raw_bytes.hex()
    if signatures:
        tx["signature"] = list(signatures)
    return tx


def transaction_size(raw_bytes: bytes, signatures: list[bytes]) -> int:
    """The serialized protocol.Transaction (raw = field 1, signatures = field 2), as bandwidth counts it."""
    size = 1 + len(_varint(len(raw_bytes))) + len(raw_bytes)
    return size + sum(1 + len(_varint(len(sig))) + len(sig) for sig in signatures)
