"""What a NEAR node answers, read into data classes (chains.near.node asks). Amounts in yoctoNEAR as int.

Shapes as nearcore's JSON-RPC writes them (docs.near.org, api/rpc): heights and nonces as JSON integers,
balances and deposits as decimal strings (u128), hashes in base58 of 32 bytes, account ids as strings.
Each parser checks what it reads: anything else is `NodeAnswerError`, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chains.near.errors import NodeAnswerError

MAX_U64 = 2**64 - 1
MAX_U128 = 2**128 - 1
SUCCESS, FAILURE, PENDING = "success", "failure", "pending"
# final_execution_status values, in order (a transaction's status only moves forward along it).
EXECUTION_LEVELS = ("NONE", "INCLUDED", "EXECUTED_OPTIMISTIC", "INCLUDED_FINAL", "EXECUTED", "FINAL")


def u64(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_U64:
        raise NodeAnswerError(f"{where} is not a u64 integer: {str(value)[:40]!r}")
    return value


def u128(value: Any, where: str) -> int:
    """A balance or a deposit: a decimal string of a u128 (nearcore never writes it as a JSON number)."""
    if not isinstance(value, str) or not value.isdigit() or len(value) > 39 or int(value) > MAX_U128:
        raise NodeAnswerError(f"{where} is not a u128 decimal string: {str(value)[:40]!r}")
    return int(value)


def obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise NodeAnswerError(f"{where} is not a JSON object")
    return value


def array(value: Any, where: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise NodeAnswerError(f"{where} is not a JSON array")
    return value


def text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 128:
        raise NodeAnswerError(f"{where} is not a non-empty string")
    return value


@dataclass(frozen=True)
class ChunkHeader:
    chunk_hash: str
    shard_id: int
    height_included: int


@dataclass(frozen=True)
class Block:
    height: int
    hash: str
    prev_hash: str
    timestamp_ns: int
    chunks: tuple[ChunkHeader, ...]

    @classmethod
    def parse(cls, value: Any) -> Block:
        block = obj(value, "block")
        header = obj(block.get("header"), "block.header")
        chunks = tuple(
            ChunkHeader(
                chunk_hash=text(c.get("chunk_hash"), "chunk.chunk_hash"),
                shard_id=u64(c.get("shard_id"), "chunk.shard_id"),
                height_included=u64(c.get("height_included"), "chunk.height_included"),
            )
            for c in (obj(each, "block.chunks[]") for each in array(block.get("chunks"), "block.chunks"))
        )
        return cls(
            height=u64(header.get("height"), "block.header.height"),
            hash=text(header.get("hash"), "block.header.hash"),
            prev_hash=text(header.get("prev_hash"), "block.header.prev_hash"),
            timestamp_ns=u64(header.get("timestamp"), "block.header.timestamp"),
            chunks=chunks,
        )

    def new_chunks(self) -> list[ChunkHeader]:
        """The chunks new in this block: a chunk carried over from an earlier block (its shard produced none
        this time) repeats the old header, with `height_included` below this height, and was read there."""
        return [chunk for chunk in self.chunks if chunk.height_included == self.height]


@dataclass(frozen=True)
class Receipt:
    """An action receipt as a chunk lists it: who sent it, who executes it, and its Transfer actions as
    (action index, yoctoNEAR). `actions` counts every action (a Transfer can share a receipt with others)."""

    receipt_id: str
    predecessor_id: str
    receiver_id: str
    signer_id: str
    transfers: tuple[tuple[int, int], ...]
    actions: int

    @classmethod
    def parse(cls, value: Any) -> Receipt | None:
        """The receipt, or None for a data receipt (it moves no money)."""
        receipt = obj(value, "receipt")
        body = obj(receipt.get("receipt"), "receipt.receipt")
        action = body.get("Action")
        if action is None:
            return None
        action = obj(action, "receipt.Action")
        actions = array(action.get("actions"), "receipt.Action.actions")
        transfers = []
        for index, each in enumerate(actions):
            if isinstance(each, Mapping) and "Transfer" in each:
                transfer = obj(each["Transfer"], "Transfer")
                transfers.append((index, u128(transfer.get("deposit"), "Transfer.deposit")))
        return cls(
            receipt_id=text(receipt.get("receipt_id"), "receipt.receipt_id"),
            predecessor_id=text(receipt.get("predecessor_id"), "receipt.predecessor_id"),
            receiver_id=text(receipt.get("receiver_id"), "receipt.receiver_id"),
            signer_id=text(action.get("signer_id"), "receipt.Action.signer_id"),
            transfers=tuple(transfers),
            actions=len(actions),
        )


@dataclass(frozen=True)
class Chunk:
    receipts: tuple[Receipt, ...]
    transactions: int

    @classmethod
    def parse(cls, value: Any) -> Chunk:
        chunk = obj(value, "chunk")
        receipts = (Receipt.parse(each) for each in array(chunk.get("receipts"), "chunk.receipts"))
        return cls(
            receipts=tuple(r for r in receipts if r is not None),
            transactions=len(array(chunk.get("transactions"), "chunk.transactions")),
        )


@dataclass(frozen=True)
class Outcome:
    """An execution outcome (of a transaction or a receipt): where it ran and how it ended."""

    id: str
    block_hash: str
    executor_id: str
    status: str  # SUCCESS, FAILURE or PENDING (Unknown / not started yet)
    failure: str
    tokens_burnt: int

    @classmethod
    def parse(cls, value: Any, where: str = "outcome") -> Outcome:
        with_id = obj(value, where)
        outcome = obj(with_id.get("outcome"), f"{where}.outcome")
        status, failure = _status(outcome.get("status"), f"{where}.outcome.status")
        return cls(
            id=text(with_id.get("id"), f"{where}.id"),
            block_hash=text(with_id.get("block_hash"), f"{where}.block_hash"),
            executor_id=text(outcome.get("executor_id"), f"{where}.outcome.executor_id"),
            status=status,
            failure=failure,
            tokens_burnt=u128(outcome.get("tokens_burnt"), f"{where}.outcome.tokens_burnt"),
        )


def _status(value: Any, where: str) -> tuple[str, str]:
    """(SUCCESS | FAILURE | PENDING, the failure in a few words)."""
    if value in ("Unknown", "NotStarted", "Started"):
        return PENDING, ""
    status = obj(value, where)
    if "SuccessValue" in status or "SuccessReceiptId" in status:
        return SUCCESS, ""
    if "Failure" in status:
        return FAILURE, _failure_text(status["Failure"])
    raise NodeAnswerError(f"{where} is not an execution status")


def _failure_text(failure: Any) -> str:
    """The names inside a failure ({"ActionError": {"index": 0, "kind": {"AccountDoesNotExist": ...}}}: the
    kind's, "AccountDoesNotExist")."""
    names: list[str] = []
    for _ in range(8):  # a failure nests a few levels; never loop on a hostile answer
        if not isinstance(failure, Mapping) or not failure:
            break
        if isinstance(failure.get("ActionError"), Mapping):
            failure = failure["ActionError"].get("kind")
            continue
        key = next(iter(failure))
        if key != "InvalidTxError":
            names.append(str(key))
        failure = failure[key]
    if isinstance(failure, str):
        names.append(failure)
    return " ".join(names)[:120] or "failed"


@dataclass(frozen=True)
class TxResult:
    """`EXPERIMENTAL_tx_status`: the transaction's outcome and every receipt's it caused."""

    hash: str
    final_execution_status: str
    status: str
    transaction_outcome: Outcome
    receipts_outcome: tuple[Outcome, ...]

    @classmethod
    def parse(cls, value: Any) -> TxResult:
        result = obj(value, "tx_status")
        level = result.get("final_execution_status", "NONE")
        if level not in EXECUTION_LEVELS:
            raise NodeAnswerError(f"tx_status.final_execution_status {str(level)[:40]!r} is not a level")
        status, _ = _status(result.get("status"), "tx_status.status")
        transaction = obj(result.get("transaction"), "tx_status.transaction")
        return cls(
            hash=text(transaction.get("hash"), "tx_status.transaction.hash"),
            final_execution_status=level,
            status=status,
            transaction_outcome=Outcome.parse(result.get("transaction_outcome"), "transaction_outcome"),
            receipts_outcome=tuple(
                Outcome.parse(each, "receipts_outcome[]")
                for each in array(result.get("receipts_outcome"), "tx_status.receipts_outcome")
            ),
        )

    @property
    def final(self) -> bool:
        return self.final_execution_status == "FINAL"

    @property
    def tokens_burnt(self) -> int:
        """What the transaction and its receipts burnt in gas: its fee."""
        return self.transaction_outcome.tokens_burnt + sum(o.tokens_burnt for o in self.receipts_outcome)

    def failure(self) -> str:
        """The first failure among its receipts ("" when none failed)."""
        for outcome in (self.transaction_outcome, *self.receipts_outcome):
            if outcome.status == FAILURE:
                return outcome.failure
        return ""


@dataclass(frozen=True)
class Account:
    amount: int
    locked: int
    storage_usage: int
    block_height: int

    @classmethod
    def parse(cls, value: Any) -> Account:
        account = obj(value, "view_account")
        return cls(
            amount=u128(account.get("amount"), "view_account.amount"),
            locked=u128(account.get("locked"), "view_account.locked"),
            storage_usage=u64(account.get("storage_usage"), "view_account.storage_usage"),
            block_height=u64(account.get("block_height"), "view_account.block_height"),
        )


@dataclass(frozen=True)
class AccessKey:
    nonce: int
    full_access: bool
    block_height: int
    block_hash: str

    @classmethod
    def parse(cls, value: Any) -> AccessKey:
        key = obj(value, "view_access_key")
        return cls(
            nonce=u64(key.get("nonce"), "view_access_key.nonce"),
            full_access=key.get("permission") == "FullAccess",
            block_height=u64(key.get("block_height"), "view_access_key.block_height"),
            block_hash=text(key.get("block_hash"), "view_access_key.block_hash"),
        )
