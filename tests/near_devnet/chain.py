"""The devnet's chain: accounts, produced blocks with one chunk per shard, pending transactions and
receipts, execution outcomes. Every change happens in `produce()` (a block) or `accept()` (a transaction
into the pool); the server holds `lock` around each request.

State: the accounts after each produced block are kept as a snapshot on that block, so a query at any
produced block (head = optimistic, head - 2 = final, or by id) answers that block's state exactly."""

from __future__ import annotations

import threading
import time
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.near_devnet import runtime
from tests.near_devnet.borsh import SignedTransaction, b58encode, key_text
from tests.near_devnet.errors import invalid_tx
from tests.near_devnet.model import (
    BLOCK_NS,
    CONTRACT,
    CONTRACT_BALANCE,
    DEFAULT_VALIDITY,
    FAUCET,
    FAUCET_BALANCE,
    FINALITY_DEPTH,
    GENESIS_HEIGHT,
    NONCE_MULTIPLIER,
    SHARDS,
    STORAGE_PRICE,
    Account,
    Block,
    Chunk,
    Outcome,
    Receipt,
    TxRecord,
    derive,
    is_implicit,
    receipt_id_for,
    shard_of,
)


class Chain:
    def __init__(self, *, validity: int = DEFAULT_VALIDITY, genesis_time_ns: int | None = None) -> None:
        self.lock = threading.RLock()
        self.validity = validity
        self.gas_price = runtime.GAS_PRICE
        self.accounts: dict[str, Account] = {}
        self.keyring: dict[bytes, Ed25519PrivateKey] = {}  # keys the controls can sign with (test keys)
        self.blocks: list[Block] = []
        self.by_hash: dict[str, Block] = {}
        self.by_height: dict[int, Block] = {}
        self.pool: list[SignedTransaction] = []
        self.pending: list[Receipt] = []
        self.receipts: dict[str, Receipt] = {}
        self.outcomes: dict[str, Outcome] = {}
        self.txs: dict[str, TxRecord] = {}
        self.skip_next = 0
        self.carry_next: set[int] = set()
        self.new_account(FAUCET, FAUCET_BALANCE, seed=b"faucet.devnet")
        self.new_account(CONTRACT, CONTRACT_BALANCE, seed=b"pay.devnet")
        genesis_ns = genesis_time_ns if genesis_time_ns is not None else time.time_ns()
        self._append(GENESIS_HEIGHT, "11111111111111111111111111111111", 0, genesis_ns)

    # --- accounts and keys ----------------------------------------------------------------------------

    def new_key(self, seed: bytes) -> bytes:
        private = Ed25519PrivateKey.from_private_bytes(derive(b"devnet-key", seed))
        public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.keyring[public] = private
        return public

    def new_account(
        self, account_id: str, amount: int, *, public_key: bytes | None = None, seed: bytes = b""
    ) -> bytes:
        if public_key is None:
            public_key = (
                bytes.fromhex(account_id)
                if is_implicit(account_id)
                else self.new_key(seed or account_id.encode())
            )
        self.accounts[account_id] = Account(amount, {public_key: 0})
        return public_key

    def sign(self, public_key: bytes, message: bytes) -> bytes:
        return self.keyring[public_key].sign(message)

    # --- blocks ---------------------------------------------------------------------------------------

    @property
    def head(self) -> Block:
        return self.blocks[-1]

    @property
    def final(self) -> Block:
        return self.blocks[max(0, len(self.blocks) - 1 - FINALITY_DEPTH)]

    def is_final(self, block: Block) -> bool:
        return block.ordinal <= self.final.ordinal

    def _append(self, height: int, prev_hash: str, prev_height: int, timestamp_ns: int) -> Block:
        ordinal = len(self.blocks) + 1
        block = Block(
            height,
            b58encode(derive(b"block", height, prev_hash)),
            prev_hash,
            prev_height,
            ordinal,
            timestamp_ns,
        )
        previous = self.blocks[-1] if self.blocks else None
        self.blocks.append(block)
        self.by_hash[block.hash] = block
        self.by_height[height] = block
        for shard in SHARDS:
            if previous is not None and shard in self.carry_next:
                block.chunks.append(previous.chunks[shard])  # carried over: the old header, nothing new
                continue
            chunk = Chunk(
                b58encode(derive(b"chunk", block.hash, shard)),
                shard,
                height,
                prev_hash,
                height_included=height,
            )
            block.chunks.append(chunk)
            self._fill(block, chunk)
        self.carry_next = set()
        block.state = {account_id: account.copy() for account_id, account in self.accounts.items()}
        return block

    def _fill(self, block: Block, chunk: Chunk) -> None:
        """List and execute the receipts due in this shard, then convert its signers' pooled transactions."""
        due = [r for r in self.pending if r.shard_id == chunk.shard_id and r.due <= block.ordinal]
        self.pending = [r for r in self.pending if r not in due]
        for receipt in due:
            chunk.receipts.append(receipt)
            self._execute(receipt, block, chunk)
        mine = sorted(
            (tx for tx in self.pool if shard_of(tx.signer_id) == chunk.shard_id),
            key=lambda t: (t.signer_id, t.nonce),
        )
        self.pool = [tx for tx in self.pool if tx not in mine]
        for tx in mine:
            if self.check(tx, at_inclusion=True) is None:  # else dropped, as a chunk producer drops it
                chunk.transactions.append(tx)
                self._convert(tx, block, chunk)
            else:
                del self.txs[tx.hash_b58]

    def produce(self, count: int = 1) -> list[Block]:
        made = []
        for _ in range(count):
            height = self.head.height + 1 + self.skip_next
            self.skip_next = 0
            made.append(
                self._append(
                    height,
                    self.head.hash,
                    self.head.height,
                    self.head.timestamp_ns + (height - self.head.height) * BLOCK_NS,
                )
            )
        return made

    def settled(self) -> bool:
        return (
            not self.pool and not self.pending and all(self.is_final(o.block) for o in self.outcomes.values())
        )

    # --- transactions ---------------------------------------------------------------------------------

    def check(self, tx: SignedTransaction, *, at_inclusion: bool = False) -> dict[str, Any] | None:
        """The InvalidTxError refusing `tx` against the current state, or None."""
        if not at_inclusion:
            try:
                Ed25519PublicKey.from_public_bytes(tx.public_key).verify(tx.signature, tx.hash)
            except (InvalidSignature, ValueError):
                return {"InvalidSignature": None}
        base = self.by_hash.get(b58encode(tx.block_hash))
        if base is None or self.head.height - base.height > self.validity:
            return {"Expired": None}
        signer = self.accounts.get(tx.signer_id)
        if signer is None:
            return {"SignerDoesNotExist": {"signer_id": tx.signer_id}}
        if tx.public_key not in signer.keys:
            key = {"account_id": tx.signer_id, "public_key": key_text(tx.public_key)}
            return {"InvalidAccessKeyError": {"AccessKeyNotFound": key}}
        ak_nonce = signer.keys[tx.public_key]
        if tx.nonce <= ak_nonce:
            return {"InvalidNonce": {"ak_nonce": ak_nonce, "tx_nonce": tx.nonce}}
        upper_bound = base.height * NONCE_MULTIPLIER
        if tx.nonce >= upper_bound:
            return {"NonceTooLarge": {"tx_nonce": tx.nonce, "upper_bound": upper_bound}}
        send, execute = runtime.fees(tx.actions, tx.signer_id, tx.receiver_id)
        cost = (send + execute) * self.gas_price + sum(a.deposit for a in tx.actions)
        if signer.amount < cost:
            return {
                "NotEnoughBalance": {
                    "signer_id": tx.signer_id,
                    "balance": str(signer.amount),
                    "cost": str(cost),
                }
            }
        deletes = tx.receiver_id == tx.signer_id and any(a.kind == "DeleteAccount" for a in tx.actions)
        required = signer.storage_usage * STORAGE_PRICE
        if not deletes and signer.amount - cost < required:
            return {
                "LackBalanceForState": {
                    "signer_id": tx.signer_id,
                    "amount": str(required - (signer.amount - cost)),
                }
            }
        return None

    def accept(self, tx: SignedTransaction) -> TxRecord:
        """Put `tx` in the pool (raising INVALID_TRANSACTION), or return its record if already known."""
        known = self.txs.get(tx.hash_b58)
        if known is not None:
            return known  # nearcore answers the known transaction's status and never runs it twice
        refusal = self.check(tx)
        if refusal is not None:
            raise invalid_tx(refusal)
        self.pool.append(tx)
        record = self.txs[tx.hash_b58] = TxRecord(tx)
        return record

    def next_nonce(self, account_id: str, public_key: bytes) -> int:
        pooled = [tx.nonce for tx in self.pool if tx.signer_id == account_id and tx.public_key == public_key]
        return max([self.accounts[account_id].keys[public_key], *pooled]) + 1

    def _convert(self, tx: SignedTransaction, block: Block, chunk: Chunk) -> None:
        signer = self.accounts[tx.signer_id]
        send, execute = runtime.fees(tx.actions, tx.signer_id, tx.receiver_id)
        signer.keys[tx.public_key] = tx.nonce
        signer.amount -= (send + execute) * self.gas_price + sum(a.deposit for a in tx.actions)
        receipt_id = receipt_id_for(tx.hash_b58)
        record = self.txs[tx.hash_b58]
        record.block = block
        self.outcomes[tx.hash_b58] = Outcome(
            tx.hash_b58,
            tx.signer_id,
            {"SuccessReceiptId": receipt_id},
            send,
            send * self.gas_price,
            [receipt_id],
            block,
        )
        chunk.gas_used += send
        chunk.balance_burnt += send * self.gas_price
        local = tx.signer_id == tx.receiver_id
        receipt = Receipt(
            receipt_id,
            tx.signer_id,
            tx.receiver_id,
            tx.signer_id,
            tx.public_key,
            self.gas_price,
            tx.actions,
            tx.hash_b58,
            shard_of(tx.signer_id),
            block.ordinal + (0 if local else 1),
            execute,
        )
        self.add_receipt(receipt)
        if local:  # a local receipt runs at once and is never listed in a chunk
            self.pending.remove(receipt)
            self._execute(receipt, block, chunk)

    # --- receipts -------------------------------------------------------------------------------------

    def add_receipt(self, receipt: Receipt) -> None:
        self.receipts[receipt.receipt_id] = receipt
        self.pending.append(receipt)
        if receipt.tx_hash is not None:
            self.txs[receipt.tx_hash].receipt_ids.append(receipt.receipt_id)

    def _execute(self, receipt: Receipt, block: Block, chunk: Chunk) -> None:
        status, children = runtime.apply(self, receipt, block)
        gas = receipt.prepaid_gas
        self.outcomes[receipt.receipt_id] = Outcome(
            receipt.receipt_id,
            receipt.receiver_id,
            status,
            gas,
            gas * receipt.gas_price,
            [child.receipt_id for child in children],
            block,
        )
        chunk.gas_used += gas
        chunk.balance_burnt += gas * receipt.gas_price
        for child in children:
            self.add_receipt(child)

    # --- transaction status ---------------------------------------------------------------------------

    def level(self, record: TxRecord) -> str:
        """nearcore's TxExecutionStatus of the transaction now."""
        if record.block is None:
            return "NONE"
        included_final = self.is_final(record.block)
        outcomes = [self.outcomes.get(receipt_id) for receipt_id in record.receipt_ids]
        if any(outcome is None for outcome in outcomes):
            return "INCLUDED_FINAL" if included_final else "INCLUDED"
        if not included_final:
            return "EXECUTED_OPTIMISTIC"
        return "FINAL" if all(self.is_final(o.block) for o in outcomes if o is not None) else "EXECUTED"

    def status(self, record: TxRecord) -> dict[str, Any] | str:
        """The FinalExecutionStatus: the end of the SuccessReceiptId chain from the transaction."""
        if record.block is None:
            return "NotStarted"
        outcome = self.outcomes[record.tx.hash_b58]
        while "SuccessReceiptId" in outcome.status:
            following = self.outcomes.get(outcome.status["SuccessReceiptId"])
            if following is None:
                return "Started"
            outcome = following
        return outcome.status

    def find_block(self, reference: Any) -> Block | None:
        if isinstance(reference, int) and not isinstance(reference, bool):
            return self.by_height.get(reference)
        if isinstance(reference, str):
            return self.by_hash.get(reference)
        return None
