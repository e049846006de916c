"""The protobuf of the TRON transactions Kassa builds and signs, written and read by hand.

Only these messages of java-tron's `core/Tron.proto` and `core/contract/*.proto` (field numbers as there):
`Transaction.raw`, `Transaction.Contract` with its `google.protobuf.Any` parameter, and the contracts
TransferContract, TriggerSmartContract, DelegateResourceContract, UnDelegateResourceContract and
AccountCreateContract.

Writing is canonical protobuf 3, as java-tron and TronWeb write it: fields in number order, minimal
varints, a field at its default value (0, false, empty) left out. Reading is strict, because a signer
signs what it has read: a field, contract type, enum value or `type_url` Kassa does not know is refused
(`ProtoError`), never skipped, and so are bytes that are not the canonical writing of what was read
(fields out of order or twice, a default written out, an overlong varint), which would let two readers
see two different things in one signed transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar

from chains.tron import address

TYPE_URL_PREFIX = "type.googleapis.com/protocol."
_VARINT, _LEN = 0, 2
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class ProtoError(ValueError):
    """Bytes that are not a transaction Kassa can read fully, or a value that cannot be written."""


class Resource(IntEnum):
    """java-tron's `ResourceCode`."""

    BANDWIDTH = 0
    ENERGY = 1
    TRON_POWER = 2


class AccountType(IntEnum):
    """java-tron's `AccountType` (its JSON names are Normal, AssetIssue, Contract)."""

    Normal = 0
    AssetIssue = 1
    Contract = 2


@dataclass(frozen=True)
class Field:
    number: int
    name: str
    kind: str  # "address", "bytes", "int64", "enum", "bool"
    enum: type[IntEnum] | None = None


class ContractMessage:
    """A contract's parameter: `TYPE` is its `Transaction.Contract.ContractType`, `FIELDS` its fields."""

    TYPE: ClassVar[int]
    FIELDS: ClassVar[tuple[Field, ...]]

    def __post_init__(self) -> None:
        # One form for every address (T...), whatever form it was given in: two messages that write the
        # same bytes are equal. InvalidTronAddress (a ValueError) for what is not an address.
        for field in self.FIELDS:
            if field.kind == "address":
                object.__setattr__(self, field.name, address.to_base58(getattr(self, field.name)))

    @classmethod
    def name(cls) -> str:
        return cls.__name__


def _a(number: int, name: str) -> Field:
    return Field(number, name, "address")


def _i(number: int, name: str) -> Field:
    return Field(number, name, "int64")


@dataclass(frozen=True)
class TransferContract(ContractMessage):
    owner_address: str  # T... (every address field: given in any TRON form, kept as T...)
    to_address: str
    amount: int  # sun

    TYPE = 1
    FIELDS = (_a(1, "owner_address"), _a(2, "to_address"), _i(3, "amount"))


@dataclass(frozen=True)
class TriggerSmartContract(ContractMessage):
    owner_address: str
    contract_address: str
    data: bytes = b""  # the ABI call
    call_value: int = 0  # sun sent along
    call_token_value: int = 0
    token_id: int = 0

    TYPE = 31
    FIELDS = (
        _a(1, "owner_address"),
        _a(2, "contract_address"),
        _i(3, "call_value"),
        Field(4, "data", "bytes"),
        _i(5, "call_token_value"),
        _i(6, "token_id"),
    )


@dataclass(frozen=True)
class DelegateResourceContract(ContractMessage):
    owner_address: str
    resource: Resource
    balance: int  # sun of staked TRX whose resource is delegated
    receiver_address: str
    lock: bool = False
    lock_period: int = 0  # blocks

    TYPE = 57
    FIELDS = (
        _a(1, "owner_address"),
        Field(2, "resource", "enum", Resource),
        _i(3, "balance"),
        _a(4, "receiver_address"),
        Field(5, "lock", "bool"),
        _i(6, "lock_period"),
    )


@dataclass(frozen=True)
class UnDelegateResourceContract(ContractMessage):
    owner_address: str
    resource: Resource
    balance: int
    receiver_address: str

    TYPE = 58
    FIELDS = (
        _a(1, "owner_address"),
        Field(2, "resource", "enum", Resource),
        _i(3, "balance"),
        _a(4, "receiver_address"),
    )


@dataclass(frozen=True)
class AccountCreateContract(ContractMessage):
    owner_address: str
    account_address: str
    type: AccountType = AccountType.Normal

    TYPE = 0
    FIELDS = (_a(1, "owner_address"), _a(2, "account_address"), Field(3, "type", "enum", AccountType))


CONTRACT_CLASSES: dict[int, type[ContractMessage]] = {
    cls.TYPE: cls
    for cls in (
        AccountCreateContract,
        TransferContract,
        TriggerSmartContract,
        DelegateResourceContract,
        UnDelegateResourceContract,
    )
}
CONTRACT_NAMES: dict[str, type[ContractMessage]] = {cls.name(): cls for cls in CONTRACT_CLASSES.values()}


@dataclass(frozen=True)
class Contract:
    """`Transaction.Contract`: the parameter (its type follows from it) and the permission that signs."""

    parameter: ContractMessage
    permission_id: int = 0


@dataclass(frozen=True)
class RawData:
    """`Transaction.raw`: what the txid is the sha256 of, and what is signed. No `auths`, no `scripts`."""

    ref_block_bytes: bytes  # bytes 6..8 of the reference block's height (TAPOS)
    ref_block_hash: bytes  # bytes 8..16 of the reference block's id
    expiration: int  # ms since the epoch; a node drops the transaction after it
    contracts: tuple[Contract, ...]
    timestamp: int = 0  # ms
    data: bytes = b""  # the memo
    fee_limit: int = 0  # sun of energy the transaction may burn at most
    ref_block_num: int = 0  # never set by TronWeb nor java-tron; kept to be read


# --- writing ------------------------------------------------------------------------------------------


def varint(value: int) -> bytes:
    """An unsigned varint; a negative int64 is written as its 64-bit two's complement (10 bytes)."""
    if value < 0:
        value += 2**64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def _len(number: int, payload: bytes) -> bytes:
    return _key(number, _LEN) + varint(len(payload)) + payload


def _int(number: int, value: int, low: int = _INT64_MIN, high: int = _INT64_MAX) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProtoError(f"field {number} is a whole number from {low} to {high}, not {value!r}")
    return _key(number, _VARINT) + varint(value) if value else b""


def encode_message(message: ContractMessage) -> bytes:
    out = bytearray()
    for field in message.FIELDS:
        value = getattr(message, field.name)
        where = f"{message.name()}.{field.name}"
        if field.kind == "address":
            try:
                out += _len(field.number, address.to_bytes(value))
            except address.InvalidTronAddress as exc:
                raise ProtoError(f"{where}: {exc}") from None
        elif field.kind == "bytes":
            if not isinstance(value, bytes):
                raise ProtoError(f"{where} is bytes, not {type(value).__name__}")
            out += _len(field.number, value) if value else b""
        elif field.kind == "bool":
            if not isinstance(value, bool):
                raise ProtoError(f"{where} is true or false, not {value!r}")
            out += _key(field.number, _VARINT) + b"\x01" if value else b""
        elif field.kind == "enum":
            assert field.enum is not None
            if value not in set(field.enum):
                raise ProtoError(f"{where} is one of {[item.name for item in field.enum]}, not {value!r}")
            out += _int(field.number, int(value))
        else:
            out += _int(field.number, value)
    return bytes(out)


def _encode_contract(contract: Contract) -> bytes:
    parameter = contract.parameter
    if type(parameter) not in CONTRACT_CLASSES.values():
        raise ProtoError(f"Kassa does not write {type(parameter).__name__} contracts")
    any_value = _len(1, (TYPE_URL_PREFIX + parameter.name()).encode()) + _len(2, encode_message(parameter))
    return (
        _int(1, parameter.TYPE, 0, _INT32_MAX)
        + _len(2, any_value)
        + _int(5, contract.permission_id, _INT32_MIN, _INT32_MAX)
    )


def encode_raw(raw: RawData) -> bytes:
    """The canonical bytes of `raw`: what its txid is the sha256 of."""
    if not raw.contracts:
        raise ProtoError("a transaction has a contract")
    for name in ("ref_block_bytes", "ref_block_hash", "data"):
        if not isinstance(getattr(raw, name), bytes):
            raise ProtoError(f"raw_data.{name} is bytes")
    out = bytearray()
    out += _len(1, raw.ref_block_bytes) if raw.ref_block_bytes else b""
    out += _int(3, raw.ref_block_num)
    out += _len(4, raw.ref_block_hash) if raw.ref_block_hash else b""
    out += _int(8, raw.expiration)
    out += _len(10, raw.data) if raw.data else b""
    for contract in raw.contracts:
        out += _len(11, _encode_contract(contract))
    out += _int(14, raw.timestamp)
    out += _int(18, raw.fee_limit)
    return bytes(out)


# --- reading ------------------------------------------------------------------------------------------


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ProtoError("the bytes end inside a varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise ProtoError("a varint longer than 10 bytes")
    if value >= 2**64:
        raise ProtoError("a varint over 64 bits")
    return value, pos


def _fields(data: bytes, what: str) -> list[tuple[int, int, int | bytes]]:
    """(number, wire type, value) of every field of `data`, in order; only varint and length-delimited."""
    found: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _read_varint(data, pos)
            found.append((number, wire, value))
        elif wire == _LEN:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise ProtoError(f"{what} field {number} runs past the end of the bytes")
            found.append((number, wire, data[pos : pos + size]))
            pos += size
        else:
            raise ProtoError(f"{what} field {number} has wire type {wire}, which no field Kassa reads has")
    return found


def _signed64(value: int) -> int:
    return value - 2**64 if value > _INT64_MAX else value


def _take(found: list[tuple[int, int, int | bytes]], known: dict[int, int], what: str) -> dict[int, Any]:
    """`found` as number -> value, each field known (with `known[number]` its wire type) and at most once."""
    values: dict[int, Any] = {}
    for number, wire, value in found:
        if number not in known:
            raise ProtoError(f"{what} has field {number}, which Kassa does not read: refused")
        if wire != known[number]:
            raise ProtoError(f"{what} field {number} has the wrong wire type")
        if number in values:
            raise ProtoError(f"{what} field {number} appears twice")
        values[number] = value
    return values


def decode_message(cls: type[ContractMessage], data: bytes) -> ContractMessage:
    what = cls.name()
    wires = {
        field.number: (_VARINT if field.kind in ("int64", "enum", "bool") else _LEN) for field in cls.FIELDS
    }
    values = _take(_fields(data, what), wires, what)
    kwargs: dict[str, Any] = {}
    for field in cls.FIELDS:
        value = values.get(field.number)
        if field.kind == "address":
            if value is None:
                raise ProtoError(f"{what} has no {field.name}")
            try:
                kwargs[field.name] = address.to_base58(bytes(value))
            except address.InvalidTronAddress as exc:
                raise ProtoError(f"{what}.{field.name}: {exc}") from None
        elif field.kind == "bytes":
            kwargs[field.name] = bytes(value or b"")
        elif field.kind == "bool":
            if value not in (None, 0, 1):
                raise ProtoError(f"{what}.{field.name} is not a bool")
            kwargs[field.name] = bool(value)
        elif field.kind == "enum":
            assert field.enum is not None
            try:
                kwargs[field.name] = field.enum(value or 0)
            except ValueError:
                raise ProtoError(f"{what}.{field.name} = {value}, a value Kassa does not know") from None
        else:
            kwargs[field.name] = _signed64(value or 0)
    return cls(**kwargs)


def _decode_contract(data: bytes) -> Contract:
    values = _take(_fields(data, "Contract"), {1: _VARINT, 2: _LEN, 5: _VARINT}, "Contract")
    kind = values.get(1, 0)
    cls = CONTRACT_CLASSES.get(kind)
    if cls is None:
        raise ProtoError(f"contract type {kind} is not one Kassa reads: refused")
    any_values = _take(_fields(values.get(2, b""), "Any"), {1: _LEN, 2: _LEN}, "Contract.parameter")
    type_url = bytes(any_values.get(1, b"")).decode("utf-8", "replace")
    if type_url != TYPE_URL_PREFIX + cls.name():
        raise ProtoError(f"a {cls.name()} contract whose parameter is {type_url!r}: refused")
    permission_id = _signed64(values.get(5, 0))
    if not _INT32_MIN <= permission_id <= _INT32_MAX:
        raise ProtoError("Contract.Permission_id is over 32 bits")
    return Contract(decode_message(cls, bytes(any_values.get(2, b""))), permission_id)


_RAW_WIRES = {1: _LEN, 3: _VARINT, 4: _LEN, 8: _VARINT, 10: _LEN, 14: _VARINT, 18: _VARINT}


def decode_raw(data: bytes) -> RawData:
    """The `Transaction.raw` of `data`; ProtoError unless Kassa reads every byte and `data` is the
    canonical writing of what it read."""
    found = _fields(bytes(data), "raw_data")
    contracts = []
    for number, wire, value in found:
        if number == 11:  # the one repeated field
            if wire != _LEN:
                raise ProtoError("raw_data field 11 has the wrong wire type")
            contracts.append(_decode_contract(bytes(value)))  # type: ignore[arg-type]
    values = _take([item for item in found if item[0] != 11], _RAW_WIRES, "raw_data")
    if not contracts:
        raise ProtoError("raw_data has no contract")
    raw = RawData(
        ref_block_bytes=bytes(values.get(1, b"")),
        ref_block_num=_signed64(values.get(3, 0)),
        ref_block_hash=bytes(values.get(4, b"")),
        expiration=_signed64(values.get(8, 0)),
        data=bytes(values.get(10, b"")),
        contracts=tuple(contracts),
        timestamp=_signed64(values.get(14, 0)),
        fee_limit=_signed64(values.get(18, 0)),
    )
    if encode_raw(raw) != bytes(data):
        raise ProtoError("raw_data is not in canonical form (field order, defaults or varints): refused")
    return raw
