"""The devnet's records: accounts, receipts, chunks, blocks, outcomes, and the fixed layout (two shards split
at "n", finality two blocks below the head, storage at 10^19 yocto a byte)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from tests.near_devnet.borsh import Action, SignedTransaction, b58decode, b58encode

STORAGE_PRICE = 10**19
ACCOUNT_BYTES = 100
KEY_BYTES = 82
GENESIS_HEIGHT = 100
FINALITY_DEPTH = 2  # final head = the block two produced blocks below the head
DEFAULT_VALIDITY = 86_400  # blocks a transaction's block_hash stays usable
NONCE_MULTIPLIER = 1_000_000
BLOCK_NS = 1_000_000_000  # the devnet's clock: one second a height (skipped heights too)
SHARDS = (0, 1)
SHARD_BOUNDARY = "n"  # the stub's fixed layout: shard 0 holds account ids < "n", shard 1 the rest
FAUCET = "faucet.devnet"
CONTRACT = "pay.devnet"
SYSTEM = "system"
FAUCET_BALANCE = 1_000_000_000 * 10**24
CONTRACT_BALANCE = 10 * 10**24
LEVELS = ("NONE", "INCLUDED", "EXECUTED_OPTIMISTIC", "INCLUDED_FINAL", "EXECUTED", "FINAL")


def shard_of(account_id: str) -> int:
    return 0 if account_id < SHARD_BOUNDARY else 1


def is_implicit(account_id: str) -> bool:
    return len(account_id) == 64 and all(c in "0123456789abcdef" for c in account_id)


def derive(*parts: bytes | str | int) -> bytes:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(
            part.encode() if isinstance(part, str) else part if isinstance(part, bytes) else b"%d" % part
        )
        digest.update(b"|")
    return digest.digest()


@dataclass
class Account:
    amount: int
    keys: dict[bytes, int]  # ed25519 public key -> nonce (all full access)

    @property
    def storage_usage(self) -> int:
        return ACCOUNT_BYTES + KEY_BYTES * len(self.keys)

    def copy(self) -> Account:
        return Account(self.amount, dict(self.keys))


@dataclass
class Receipt:
    receipt_id: str
    predecessor_id: str
    receiver_id: str
    signer_id: str
    signer_public_key: bytes
    gas_price: int
    actions: tuple[Action, ...]
    tx_hash: str | None
    shard_id: int  # the shard whose chunk lists it
    due: int  # ordinal of the first block that may list it
    prepaid_gas: int = 0  # exec fees bought at the transaction's conversion


@dataclass
class Chunk:
    chunk_hash: str
    shard_id: int
    height_created: int
    prev_block_hash: str
    transactions: list[SignedTransaction] = field(default_factory=list)
    receipts: list[Receipt] = field(default_factory=list)
    gas_used: int = 0
    balance_burnt: int = 0
    height_included: int = 0


@dataclass
class Block:
    height: int
    hash: str
    prev_hash: str
    prev_height: int
    ordinal: int
    timestamp_ns: int
    chunks: list[Chunk] = field(default_factory=list)
    state: dict[str, Account] = field(default_factory=dict)


@dataclass
class Outcome:
    id: str
    executor_id: str
    status: dict[str, Any]
    gas_burnt: int
    tokens_burnt: int
    receipt_ids: list[str]
    block: Block


@dataclass
class TxRecord:
    tx: SignedTransaction
    receipt_ids: list[str] = field(default_factory=list)  # every receipt it caused, in creation order
    block: Block | None = None


def receipt_id_for(parent: str, index: int = 0) -> str:
    """Receipt ids are derived (from the transaction hash or the parent receipt id and an index), so a
    control can name a receipt before it exists."""
    return b58encode(derive(b"receipt", b58decode(parent), index))
