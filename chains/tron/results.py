"""What a java-tron node answers, read into data classes (chains.tron.node asks). Amounts in sun as int.

Shapes as java-tron's HTTP API writes them (`"visible": false`): addresses in hex with 41, except log
addresses (20 bytes, no 41) and topics (hex without 0x); a field at its default value is left out (an
account that never held TRX has no `balance`; an unknown account or transaction is `{}`). A shape that
is not what java-tron writes is `NodeAnswerError`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chains.base import ChainUnavailable
from chains.tron import address
from chains.tron.proto import CONTRACT_NAMES, ProtoError
from chains.tron.transaction import Transaction, TransactionMismatch, Trc20Transfer, parse_transfer_log

_NUM_ID = re.compile(r"Num:(\d+),ID:([0-9a-f]{64})")
_ID = re.compile(r"[0-9a-f]{64}")


class NodeAnswerError(ChainUnavailable):
    """The node answered, but not in a shape java-tron writes (or its transaction's bytes disagree): like
    any nonsense answer (chains.answers), the node is treated as unavailable and the caller waits."""


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NodeAnswerError(f"{key} is a whole number, not {value!r}")
    return value


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise NodeAnswerError(f"{key} is text, not {value!r}")
    return value


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise NodeAnswerError(f"{what} is a JSON object")
    return value


def hex_message(text: str) -> str:
    """java-tron writes some messages hex-encoded (broadcast, trigger): their text when they are."""
    if text and re.fullmatch(r"(?:[0-9a-fA-F]{2})+", text):
        try:
            return bytes.fromhex(text).decode("utf-8")
        except UnicodeDecodeError:
            return text
    return text


@dataclass(frozen=True)
class BlockId:
    height: int
    block_id: str


@dataclass(frozen=True)
class NodeInfo:
    """`wallet/getnodeinfo`: the node's head and its solidified block (TRON's finality)."""

    head: BlockId
    solid: BlockId

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> NodeInfo:
        return cls(_num_id(data, "block"), _num_id(data, "solidityBlock"))


def _num_id(data: Mapping[str, Any], key: str) -> BlockId:
    found = _NUM_ID.fullmatch(_text(data, key))
    if found is None:
        raise NodeAnswerError(f"getnodeinfo's {key} is not Num:<height>,ID:<block id>")
    return BlockId(int(found[1]), found[2])


@dataclass(frozen=True)
class NodeTransaction:
    """A transaction in a block or read by id: `transaction` is read from its bytes when Kassa reads its
    contract type (TransferContract, TriggerSmartContract...), None for the others (votes, stakes...).

    A transaction of a type Kassa reads whose bytes it cannot read fully (a field it does not know: java-tron
    keeps unknown fields, so such a transaction can be valid on chain) has `transaction` None and says why
    in `unreadable`: a scanner must not take that for "not a payment" (it may be a deposit)."""

    txid: str
    contract_type: str  # as the node names it: "TransferContract", "TriggerSmartContract"...
    result: str  # contractRet: "SUCCESS", "REVERT", "OUT_OF_ENERGY"...; "" before it is in a block
    transaction: Transaction | None
    unreadable: str = ""

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> NodeTransaction:
        raw_hex = _text(data, "raw_data_hex")
        txid = _text(data, "txID").lower()
        if not re.fullmatch(r"(?:[0-9a-fA-F]{2})+", raw_hex):
            raise NodeAnswerError(f"transaction {txid!r} has no raw_data_hex")
        if not _ID.fullmatch(txid) or hashlib.sha256(bytes.fromhex(raw_hex)).hexdigest() != txid:
            raise NodeAnswerError(f"transaction {txid!r}: its txID is not the sha256 of its raw_data_hex")
        contracts = _object(data.get("raw_data"), "raw_data").get("contract") or [{}]
        kind = _text(_object(contracts[0], "a contract"), "type")
        ret = data.get("ret") or [{}]
        result = _text(_object(ret[0], "ret"), "contractRet")
        try:
            return cls(txid, kind, result, Transaction.from_json(data))
        except ProtoError as exc:
            known = kind in CONTRACT_NAMES  # else a kind Kassa never builds nor is paid with
            return cls(txid, kind, result, None, str(exc) if known else "")
        except TransactionMismatch as exc:
            raise NodeAnswerError(str(exc)) from None


@dataclass(frozen=True)
class Block:
    height: int
    block_id: str
    parent_id: str
    timestamp: int  # ms
    transactions: tuple[NodeTransaction, ...]

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> Block:
        header = _object(_object(data.get("block_header"), "block_header").get("raw_data"), "block header")
        block_id = _text(data, "blockID")
        if not _ID.fullmatch(block_id):
            raise NodeAnswerError(f"blockID {block_id!r} is not 32 bytes of hex")
        return cls(
            height=_int(header, "number"),
            block_id=block_id,
            parent_id=_text(header, "parentHash"),
            timestamp=_int(header, "timestamp"),
            transactions=tuple(
                NodeTransaction.parse(_object(tx, "a transaction")) for tx in data.get("transactions") or []
            ),
        )


@dataclass(frozen=True)
class Log:
    address: str  # T... of the contract that emitted it
    topics: tuple[str, ...]  # hex, no 0x
    data: str


@dataclass(frozen=True)
class TransactionInfo:
    """`gettransactioninfoby*`: the receipt of a transaction in a block."""

    txid: str
    block_number: int
    block_timestamp: int
    fee: int  # sun burnt in all
    failed: bool  # the transaction is in the block but did nothing (its "result": "FAILED")
    receipt_result: str  # "SUCCESS", "REVERT", "OUT_OF_ENERGY"...; "" for a plain TRX transfer
    energy_usage_total: int
    energy_fee: int
    net_usage: int
    net_fee: int
    logs: tuple[Log, ...]
    message: str  # why it failed, in text

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> TransactionInfo:
        receipt = _object(data.get("receipt", {}), "receipt")
        logs = []
        for entry in data.get("log") or []:
            entry = _object(entry, "a log")
            topics = entry.get("topics") or []
            if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
                raise NodeAnswerError("a log's topics are a list of hex")
            logs.append(Log(_log_address(_text(entry, "address")), tuple(topics), _text(entry, "data")))
        return cls(
            txid=_text(data, "id"),
            block_number=_int(data, "blockNumber"),
            block_timestamp=_int(data, "blockTimeStamp"),
            fee=_int(data, "fee"),
            failed=_text(data, "result") == "FAILED",
            receipt_result=_text(receipt, "result"),
            energy_usage_total=_int(receipt, "energy_usage_total"),
            energy_fee=_int(receipt, "energy_fee"),
            net_usage=_int(receipt, "net_usage"),
            net_fee=_int(receipt, "net_fee"),
            logs=tuple(logs),
            message=hex_message(_text(data, "resMessage")),
        )

    def trc20_transfers(self) -> list[tuple[int, Trc20Transfer]]:
        """(log index, transfer) of every TRC-20 Transfer log; the index is the transfer's output index."""
        found = []
        for index, log in enumerate(self.logs):
            raw = {"address": address.to_evm(log.address), "topics": list(log.topics), "data": log.data}
            transfer = parse_transfer_log(raw)
            if transfer is not None:
                found.append((index, transfer))
        return found


def _log_address(text: str) -> str:
    try:
        return address.from_evm(text[-40:]) if len(text) in (40, 42) else address.to_base58(text)
    except address.InvalidTronAddress as exc:
        raise NodeAnswerError(f"a log's address: {exc}") from None


@dataclass(frozen=True)
class Account:
    """`wallet/getaccount`; an address the chain has never seen is not activated (`exists` False)."""

    address: str
    exists: bool
    balance: int  # sun
    staked_energy: int = 0  # sun staked for energy and not delegated away (frozenV2 ENERGY): lendable

    @classmethod
    def parse(cls, asked: str, data: Mapping[str, Any]) -> Account:
        frozen = data.get("frozenV2") or []
        if not isinstance(frozen, list):
            raise NodeAnswerError("getaccount: frozenV2 is not a list")
        energy = sum(
            _int(entry, "amount")
            for entry in (_object(item, "a frozenV2 entry") for item in frozen)
            if entry.get("type") == "ENERGY"
        )
        return cls(address.to_base58(asked), bool(data), _int(data, "balance"), energy)


@dataclass(frozen=True)
class AccountResource:
    """`wallet/getaccountresource`: bandwidth (free and staked) and energy, limits and what is used."""

    free_net_limit: int
    free_net_used: int
    net_limit: int
    net_used: int
    energy_limit: int
    energy_used: int
    # The whole network's: energy a day, and TRX staked for it; one staked TRX gives limit / weight energy.
    total_energy_limit: int = 0
    total_energy_weight: int = 0

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> AccountResource:
        return cls(
            free_net_limit=_int(data, "freeNetLimit"),
            free_net_used=_int(data, "freeNetUsed"),
            net_limit=_int(data, "NetLimit"),
            net_used=_int(data, "NetUsed"),
            energy_limit=_int(data, "EnergyLimit"),
            energy_used=_int(data, "EnergyUsed"),
            total_energy_limit=_int(data, "TotalEnergyLimit"),
            total_energy_weight=_int(data, "TotalEnergyWeight"),
        )

    @property
    def energy_left(self) -> int:
        return max(self.energy_limit - self.energy_used, 0)

    @property
    def bandwidth_left(self) -> int:
        return max(self.free_net_limit - self.free_net_used, 0) + max(self.net_limit - self.net_used, 0)


@dataclass(frozen=True)
class ChainParameters:
    """`wallet/getchainparameters` by key (`getEnergyFee`...); a parameter at 0 has no value there."""

    values: Mapping[str, int]

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> ChainParameters:
        entries = data.get("chainParameter")
        if not isinstance(entries, list):
            raise NodeAnswerError("getchainparameters has no chainParameter list")
        values = {}
        for entry in entries:
            entry = _object(entry, "a chain parameter")
            values[_text(entry, "key")] = _int(entry, "value")
        return cls(values)

    def sun(self, key: str) -> int:
        """A fee or rate parameter; java-tron leaves a parameter at 0 out of its answer: free, not unknown."""
        return self.values.get(key, 0)

    def __getitem__(self, key: str) -> int:
        if key not in self.values:
            raise KeyError(f"the node has no chain parameter {key}")
        return self.values[key]

    @property
    def energy_fee(self) -> int:
        """Sun burnt per unit of energy not covered by staked or delegated energy."""
        return self["getEnergyFee"]

    @property
    def transaction_fee(self) -> int:
        """Sun burnt per byte of bandwidth not covered by free or staked bandwidth."""
        return self["getTransactionFee"]

    @property
    def create_account_fee(self) -> int:
        """Sun a TRX transfer to an address never seen burns to activate it (and its bandwidth)."""
        return self["getCreateAccountFee"]

    @property
    def create_account_fee_in_system_contract(self) -> int:
        return self["getCreateNewAccountFeeInSystemContract"]


@dataclass(frozen=True)
class ConstantResult:
    """`wallet/triggerconstantcontract`: what a call would return and the energy it would use."""

    energy_used: int
    results: tuple[bytes, ...]
    reverted: bool
    message: str


@dataclass(frozen=True)
class TronGridTransfer:
    """One entry of TronGrid's `v1/accounts/{address}/transactions/trc20`."""

    txid: str
    contract: str  # T...
    from_address: str
    to_address: str
    amount: int  # the token's smallest unit
    block_timestamp: int
    kind: str  # "Transfer", "Approval"

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> TronGridTransfer:
        token = _object(data.get("token_info"), "token_info")
        value = _text(data, "value")
        if not value.isdigit():
            raise NodeAnswerError(f"a TRC-20 value is a whole number in text, not {value!r}")
        try:
            return cls(
                txid=_text(data, "transaction_id"),
                contract=address.to_base58(_text(token, "address")),
                from_address=address.to_base58(_text(data, "from")),
                to_address=address.to_base58(_text(data, "to")),
                amount=int(value),
                block_timestamp=_int(data, "block_timestamp"),
                kind=_text(data, "type"),
            )
        except address.InvalidTronAddress as exc:
            raise NodeAnswerError(f"a TRC-20 transfer: {exc}") from None


@dataclass(frozen=True)
class TronGridPage:
    transfers: tuple[TronGridTransfer, ...]
    fingerprint: str | None  # for the next page; None on the last
