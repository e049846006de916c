"""toncenter's API v2 results as Kassa reads them, and the checks of their shape: every field Kassa uses
is checked for its type and form, and a transaction's JSON against its own bytes (chains.ton.messages).
An answer that fails a check is `NodeAnswerError` (a ChainUnavailable: the caller waits and logs it)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytoniq_core import Address

from chains.base import ChainUnavailable
from chains.ton.messages import (
    MessageParseError,
    ParsedMessage,
    ParsedTransaction,
    parse_transaction,
    raw_address,
)
from chains.ton.units import parse_nanotons

ACCOUNT_STATES = ("uninitialized", "active", "frozen")


class NodeAnswerError(ChainUnavailable):
    """toncenter answered in a shape it does not write (or with bytes that contradict its JSON)."""


# --- results ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransactionId:
    lt: int
    hash: bytes  # 32 bytes

    @property
    def hash_b64(self) -> str:
        return base64.b64encode(self.hash).decode()


@dataclass(frozen=True)
class BlockId:
    workchain: int
    shard: int
    seqno: int
    root_hash: bytes
    file_hash: bytes


@dataclass(frozen=True)
class MasterchainInfo:
    last: BlockId
    init: BlockId
    state_root_hash: bytes


@dataclass(frozen=True)
class AddressInformation:
    balance: int  # nanotons
    state: str  # "uninitialized", "active" or "frozen"
    code: bytes  # BOC, b"" when none
    data: bytes
    last_transaction: TransactionId | None  # None: the account has no transaction
    block: BlockId
    sync_utime: int


@dataclass(frozen=True)
class WalletInformation:
    wallet: bool  # a known wallet contract
    balance: int
    state: str
    last_transaction: TransactionId | None
    wallet_type: str | None  # "wallet v4 r2"...
    seqno: int | None
    wallet_id: int | None


@dataclass(frozen=True)
class Message:
    """A message as toncenter reports it (its JSON), with the parsed bytes beside it."""

    hash: bytes
    source: str | None  # wc:hex; None for an external-in message
    destination: str | None  # wc:hex; None for an external-out message
    value: int
    fwd_fee: int
    created_lt: int
    body_hash: bytes
    text: str | None  # toncenter's decoded text comment (msg.dataText), if it gave one
    parsed: ParsedMessage | None  # from the transaction's bytes

    @property
    def comment(self) -> str | None:
        return self.parsed.comment if self.parsed is not None else self.text

    @property
    def bounced(self) -> bool:
        return bool(self.parsed and self.parsed.bounced)


@dataclass(frozen=True)
class Transaction:
    account: str  # wc:hex
    id: TransactionId
    utime: int
    fee: int
    storage_fee: int
    in_msg: Message | None
    out_msgs: tuple[Message, ...]
    data: bytes  # the transaction's BOC
    parsed: ParsedTransaction

    @property
    def aborted(self) -> bool:
        return self.parsed.aborted


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    gas_used: int
    stack: tuple[tuple[str, Any], ...]  # toncenter's legacy entries: ("num", int), ("cell", bytes)...

    def number(self, index: int = 0) -> int:
        kind, value = self.stack[index]
        if kind != "num" or not isinstance(value, int):
            raise NodeAnswerError(f"runGetMethod: stack[{index}] is {kind}, not a number")
        return value


@dataclass(frozen=True)
class SentMessage:
    hash: bytes
    hash_norm: bytes | None


@dataclass(frozen=True)
class Fees:
    in_fwd_fee: int
    storage_fee: int
    gas_fee: int
    fwd_fee: int

    @property
    def total(self) -> int:
        return self.in_fwd_fee + self.storage_fee + self.gas_fee + self.fwd_fee


# --- shape checks ------------------------------------------------------------------------------------------


def object_of(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise NodeAnswerError(f"{what}: not an object")
    return value


def whole(value: Any, what: str) -> int:
    """A whole number, given as a JSON integer or a decimal string (toncenter writes lt and amounts so)."""
    if isinstance(value, bool):
        raise NodeAnswerError(f"{what}: not a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return parse_nanotons(value, what)
        except ValueError:
            pass
    raise NodeAnswerError(f"{what}: not a whole number ({value!r})")


def amount_of(value: Any, what: str) -> int:
    amount = whole(value, what)
    if amount < 0:
        raise NodeAnswerError(f"{what}: negative")
    return amount


def b64(value: Any, what: str) -> bytes:
    """toncenter's Bytes: base64 ("" for none)."""
    if not isinstance(value, str):
        raise NodeAnswerError(f"{what}: not base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise NodeAnswerError(f"{what}: not base64") from None


def hash32(value: Any, what: str) -> bytes:
    raw = b64(value, what)
    if len(raw) != 32:
        raise NodeAnswerError(f"{what}: not a 32-byte hash")
    return raw


def address_of(value: Any, what: str) -> str | None:
    """Any form of an address as wc:hex; "" is no address (None)."""
    if value == "":
        return None
    if not isinstance(value, str):
        raise NodeAnswerError(f"{what}: not an address")
    try:
        return raw_address(Address(value))
    except Exception:  # pytoniq raises several kinds on malformed addresses
        raise NodeAnswerError(f"{what}: not an address ({value!r})") from None


def transaction_id_of(value: Any, what: str) -> TransactionId | None:
    data = object_of(value, what)
    lt = whole(data.get("lt"), f"{what}.lt")
    digest = hash32(data.get("hash"), f"{what}.hash")
    if lt == 0 and digest == bytes(32):
        return None
    return TransactionId(lt, digest)


def block_id_of(value: Any, what: str) -> BlockId:
    data = object_of(value, what)
    return BlockId(
        workchain=whole(data.get("workchain"), f"{what}.workchain"),
        shard=whole(data.get("shard"), f"{what}.shard"),
        seqno=whole(data.get("seqno"), f"{what}.seqno"),
        root_hash=hash32(data.get("root_hash"), f"{what}.root_hash"),
        file_hash=hash32(data.get("file_hash"), f"{what}.file_hash"),
    )


def state_of(value: Any, what: str) -> str:
    if value not in ACCOUNT_STATES:
        raise NodeAnswerError(f"{what}: not an account state ({value!r})")
    return str(value)


def message_of(value: Any, what: str, parsed: ParsedMessage | None) -> Message:
    data = object_of(value, what)
    msg_data = object_of(data.get("msg_data"), f"{what}.msg_data")
    text: str | None = None
    if msg_data.get("@type") == "msg.dataText":
        try:
            text = b64(msg_data.get("text"), f"{what}.msg_data.text").decode("utf-8")
        except UnicodeDecodeError:
            text = None
    elif msg_data.get("@type") not in ("msg.dataRaw", "msg.dataEncryptedText", "msg.dataDecryptedText"):
        raise NodeAnswerError(f"{what}.msg_data: unknown @type {msg_data.get('@type')!r}")
    message = Message(
        hash=hash32(data.get("hash"), f"{what}.hash"),
        source=address_of(data.get("source"), f"{what}.source"),
        destination=address_of(data.get("destination"), f"{what}.destination"),
        value=amount_of(data.get("value"), f"{what}.value"),
        fwd_fee=amount_of(data.get("fwd_fee"), f"{what}.fwd_fee"),
        created_lt=whole(data.get("created_lt"), f"{what}.created_lt"),
        body_hash=hash32(data.get("body_hash"), f"{what}.body_hash"),
        text=text,
        parsed=parsed,
    )
    if parsed is not None:
        agree = (
            message.hash == parsed.hash
            and message.value == parsed.value
            and message.source == parsed.source
            and message.destination == parsed.destination
            and message.body_hash == parsed.body_hash
        )
        if not agree:
            raise NodeAnswerError(f"{what}: the JSON and the transaction's bytes disagree")
        if text is not None and parsed.comment is not None and text != parsed.comment:
            raise NodeAnswerError(f"{what}: the comment and the transaction's bytes disagree")
    return message


def parse_transaction_json(value: Any, what: str = "transaction") -> Transaction:
    """One transaction of getTransactions, checked against its own bytes."""
    data = object_of(value, what)
    address = object_of(data.get("address"), f"{what}.address")
    account = address_of(address.get("account_address"), f"{what}.address.account_address")
    if account is None:
        raise NodeAnswerError(f"{what}: no account address")
    tx_id = transaction_id_of(data.get("transaction_id"), f"{what}.transaction_id")
    if tx_id is None:
        raise NodeAnswerError(f"{what}: no transaction id")
    boc = b64(data.get("data"), f"{what}.data")
    try:
        parsed = parse_transaction(boc, int(account.split(":")[0]))
    except MessageParseError as exc:
        raise NodeAnswerError(f"{what}.data: {exc}") from None
    if (parsed.account, parsed.lt, parsed.hash) != (account, tx_id.lt, tx_id.hash):
        raise NodeAnswerError(f"{what}: the transaction's bytes are another transaction")
    utime = whole(data.get("utime"), f"{what}.utime")
    if utime != parsed.now:
        raise NodeAnswerError(f"{what}: utime and the transaction's bytes disagree")
    in_msg = data.get("in_msg")
    if (in_msg is None) != (parsed.in_msg is None):
        raise NodeAnswerError(f"{what}: in_msg and the transaction's bytes disagree")
    outs = data.get("out_msgs")
    if not isinstance(outs, list) or len(outs) != len(parsed.out_msgs):
        raise NodeAnswerError(f"{what}: out_msgs and the transaction's bytes disagree")
    return Transaction(
        account=account,
        id=tx_id,
        utime=utime,
        fee=amount_of(data.get("fee"), f"{what}.fee"),
        storage_fee=amount_of(data.get("storage_fee"), f"{what}.storage_fee"),
        in_msg=message_of(in_msg, f"{what}.in_msg", parsed.in_msg) if in_msg is not None else None,
        out_msgs=tuple(
            message_of(out, f"{what}.out_msgs[{i}]", parsed.out_msgs[i]) for i, out in enumerate(outs)
        ),
        data=boc,
        parsed=parsed,
    )


def stack_entry(value: Any, what: str) -> tuple[str, Any]:
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str):
        raise NodeAnswerError(f"{what}: not a [type, value] entry")
    kind, item = value
    if kind == "num":
        if not isinstance(item, str):
            raise NodeAnswerError(f"{what}: a number is hex text")
        try:
            return kind, int(item, 16)
        except ValueError:
            raise NodeAnswerError(f"{what}: not a hex number ({item!r})") from None
    if kind == "cell":
        cell = object_of(item, what)
        return kind, b64(cell.get("bytes"), f"{what}.bytes")
    return kind, item
