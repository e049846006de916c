"""The devnet's chain: genesis (the faucet and the customer), the working bank that executes transactions as
they come, slots produced on request, the banks of the three commitments, recent blockhashes, the status
cache, and the records every answer is read from.

Slots: genesis is slot GENESIS_SLOT at block height GENESIS_HEIGHT (the slots before it count as skipped,
so a block height is never mistaken for a slot); after it no slot is skipped, so the height of slot s is
s - GENESIS_SLOT + GENESIS_HEIGHT. The head is the newest produced slot; the working bank is head + 1
(`processed`), the head is `confirmed`, and head - 31 is `finalized`."""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bip_utils import Base58Encoder
from solders.account import Account
from solders.hash import Hash
from solders.litesvm import LiteSVM
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata, TransactionMetadata

from tests.solana_devnet import wallet
from tests.solana_devnet.errors import (
    SEND_TRANSACTION_PREFLIGHT_FAILURE,
    TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
    RpcError,
    invalid_params,
    transaction_error_text,
)
from tests.solana_devnet.wallet import COMPUTE_BUDGET_PROGRAM, MEMO_V1, MEMO_V3, SYSTEM_PROGRAM

GENESIS_SLOT = 350_000_000
GENESIS_HEIGHT = 330_000_000
GENESIS_TIME = 1_767_225_600  # 2026-01-01T00:00:00Z
SLOT_MS = 400
FINALITY_DEPTH = 31  # a slot is finalized (rooted) once 31 slots are built on it
MAX_PROCESSING_AGE = 150  # a blockhash is usable up to its block height + 150
STATUS_CACHE_SLOTS = 300  # getSignatureStatuses without searchTransactionHistory looks this far back
PRIORITIZATION_FEE_SLOTS = 150  # getRecentPrioritizationFees' window
LAMPORTS_PER_SIGNATURE = 5_000
DEFAULT_BUILTIN_UNITS = 3_000  # the compute-unit limit a builtin instruction asks for by default
DEFAULT_PROGRAM_UNITS = 200_000  # and any other instruction
MAX_COMPUTE_UNITS = 1_400_000
FAUCET_LAMPORTS = 500_000_000 * wallet.LAMPORTS_PER_SOL
CUSTOMER_LAMPORTS = 1_000 * wallet.LAMPORTS_PER_SOL
COMMITMENTS = ("processed", "confirmed", "finalized")
BUILTINS = frozenset(
    Pubkey.from_string(key)
    for key in (
        "11111111111111111111111111111111",
        "ComputeBudget111111111111111111111111111111",
        "Vote111111111111111111111111111111111111111",
        "BPFLoader1111111111111111111111111111111111",
        "BPFLoader2111111111111111111111111111111111",
        "BPFLoaderUpgradeab1e11111111111111111111111",
        "LoaderV411111111111111111111111111111111111",
        "Ed25519SigVerify111111111111111111111111111",
        "KeccakSecp256k11111111111111111111111111111",
        "Secp256r1SigVerify1111111111111111111111111",
    )
)


@dataclass
class Record:
    """A transaction the working bank executed and kept: its slot, its place in the slot, its outcome."""

    transaction: VersionedTransaction
    slot: int
    index: int
    err: Any  # None, or TransactionError as Agave's JSON writes it
    fee: int
    pre_balances: list[int]
    post_balances: list[int]
    logs: list[str]
    inner_instructions: list[dict[str, Any]]
    units_consumed: int
    return_data: dict[str, Any] | None
    unit_price: int  # micro-lamports per compute unit

    @property
    def signature(self) -> str:
        return str(self.transaction.signatures[0])

    @property
    def account_keys(self) -> list[Pubkey]:
        return list(self.transaction.message.account_keys)

    @property
    def writable_keys(self) -> list[Pubkey]:
        """The keys the message locks for writing, by its header (the signed ones less the last
        numReadonlySignedAccounts, the unsigned ones less the last numReadonlyUnsignedAccounts)."""
        header, keys = self.transaction.message.header, self.account_keys
        signed = header.num_required_signatures
        return [
            key
            for i, key in enumerate(keys)
            if i < signed - header.num_readonly_signed_accounts
            or signed <= i < len(keys) - header.num_readonly_unsigned_accounts
        ]

    @property
    def memo(self) -> str | None:
        """Agave's `memo` of getSignaturesForAddress: each memo instruction's data as "[len] text", joined."""
        keys = self.account_keys
        memos = []
        for instruction in self.transaction.message.instructions:
            if keys[instruction.program_id_index] in (MEMO_V1, MEMO_V3):
                data = bytes(instruction.data)
                try:
                    text = data.decode()
                except UnicodeDecodeError:
                    text = "(unparseable)"
                memos.append(f"[{len(data)}] {text}")
        return "; ".join(memos) if memos else None


@dataclass
class Slot:
    number: int
    height: int
    blockhash: Hash
    time: int  # unix seconds
    records: list[Record] = field(default_factory=list)


class Dropped(Exception):
    """The working bank did not take the transaction (it never lands); `err` is why, as Agave's JSON."""

    def __init__(self, err: Any) -> None:
        super().__init__(transaction_error_text(err))
        self.err = err


class Devnet:
    """One chain. Every read and write holds `lock` (the server takes it around each request)."""

    def __init__(self, *, genesis_time: int = GENESIS_TIME) -> None:
        self.lock = threading.RLock()
        self.genesis_time = genesis_time
        self.svm = LiteSVM().with_blockhash_check(False).with_transaction_history(0)
        self.faucet = wallet.keypair("faucet")
        self.customer = wallet.keypair("customer")
        genesis_hash = Hash(hashlib.sha256(b"kassa solana devnet: genesis").digest())
        genesis = Slot(GENESIS_SLOT, GENESIS_HEIGHT, genesis_hash, genesis_time)
        self.slots: dict[int, Slot] = {GENESIS_SLOT: genesis}
        self.hash_slots: dict[Hash, int] = {genesis_hash: GENESIS_SLOT}
        self.head = GENESIS_SLOT
        self.pending: list[Record] = []
        self.by_signature: dict[str, Record] = {}
        self.by_address: dict[Pubkey, list[Record]] = {}
        # Every balance an address had: (slot, lamports), in order; the bank of a slot reads the last one.
        self.balances: dict[Pubkey, list[tuple[int, int]]] = {}
        for key, lamports in ((self.faucet, FAUCET_LAMPORTS), (self.customer, CUSTOMER_LAMPORTS)):
            self.svm.set_account(key.pubkey(), Account(lamports, b"", SYSTEM_PROGRAM, False, 0))
            self.balances[key.pubkey()] = [(GENESIS_SLOT, lamports)]
        self._set_clock()

    # --- slots and banks -------------------------------------------------------------------------------

    @property
    def working_slot(self) -> int:
        return self.head + 1

    @property
    def finalized_slot(self) -> int:
        return max(self.head - FINALITY_DEPTH, GENESIS_SLOT)

    def bank_slot(self, commitment: str) -> int:
        """The slot of the bank that answers at `commitment`."""
        if commitment == "processed":
            return self.working_slot
        return self.head if commitment == "confirmed" else self.finalized_slot

    @staticmethod
    def height(slot: int) -> int:
        return slot - GENESIS_SLOT + GENESIS_HEIGHT

    def slot_time(self, slot: int) -> int:
        return self.genesis_time + (slot - GENESIS_SLOT) * SLOT_MS // 1000

    def commitment_of(self, record: Record) -> str:
        if record.slot > self.head:
            return "processed"
        return "finalized" if record.slot <= self.finalized_slot else "confirmed"

    def mine(self, slots: int = 1) -> Slot:
        """Produce `slots` slots: the working bank's transactions land in the first; the head moves on."""
        if slots < 1:
            raise ValueError("mine at least one slot")
        for _ in range(slots):
            number = self.working_slot
            parent = self.slots[self.head]
            blockhash = Hash(hashlib.sha256(bytes(parent.blockhash) + number.to_bytes(8, "big")).digest())
            slot = Slot(number, self.height(number), blockhash, self.slot_time(number), self.pending)
            self.pending = []
            self.slots[number] = slot
            self.hash_slots[blockhash] = number
            self.head = number
        self._set_clock()
        return self.slots[self.head]

    def _set_clock(self) -> None:
        """The SVM's Clock sysvar is the working bank's."""
        self.svm.warp_to_slot(self.working_slot)
        clock = self.svm.get_clock()
        clock.unix_timestamp = self.slot_time(self.working_slot)
        self.svm.set_clock(clock)

    # --- blockhashes, balances, fees -------------------------------------------------------------------

    def latest_blockhash(self, commitment: str) -> tuple[Hash, int]:
        """The newest blockhash the bank at `commitment` knows, and its lastValidBlockHeight."""
        slot = self.slots[min(self.bank_slot(commitment), self.head)]
        return slot.blockhash, slot.height + MAX_PROCESSING_AGE

    def blockhash_valid(self, blockhash: Hash, bank: int) -> bool:
        """Whether a transaction of `blockhash` may be processed by the bank of slot `bank`."""
        slot = self.hash_slots.get(blockhash)
        return (
            slot is not None
            and slot <= min(bank, self.head)
            and self.height(bank) <= self.height(slot) + MAX_PROCESSING_AGE
        )

    def balance(self, address: Pubkey, bank: int) -> int:
        history = self.balances.get(address)
        if history is None:  # no transaction ever touched it: as it was at genesis
            return self.svm.get_balance(address) or 0
        at = bisect.bisect_right(history, bank, key=lambda entry: entry[0])
        return history[at - 1][1] if at else 0

    def fee(self, message: Message | MessageV0) -> int:
        """What a transaction of `message` pays: 5,000 lamports a signature and the priority fee."""
        limit, price = compute_budget(message)
        priority = (price * limit + 999_999) // 1_000_000
        return LAMPORTS_PER_SIGNATURE * message.header.num_required_signatures + priority

    # --- transactions ----------------------------------------------------------------------------------

    def preflight(self, transaction: VersionedTransaction, commitment: str) -> None:
        """sendTransaction's preflight as Agave's: the signatures, then a simulation in the bank at
        `commitment` (its blockhashes and status cache; the state simulated is the newest)."""
        if not all(transaction.verify_with_results()):
            raise RpcError(
                TRANSACTION_SIGNATURE_VERIFICATION_FAILURE, "Transaction signature verification failure"
            )
        bank = self.bank_slot(commitment)
        if not self.blockhash_valid(transaction.message.recent_blockhash, bank):
            raise preflight_failure("BlockhashNotFound")
        known = self.by_signature.get(str(transaction.signatures[0]))
        if known is not None and known.slot <= bank:
            raise preflight_failure("AlreadyProcessed")
        simulated = self.svm.simulate_transaction(transaction)
        if isinstance(simulated, FailedTransactionMetadata):
            meta = simulated.meta()
            raise preflight_failure(
                _error_json(simulated), logs=list(meta.logs()), units=meta.compute_units_consumed()
            )

    def execute(self, transaction: VersionedTransaction) -> Record:
        """The working bank processes `transaction`: a Record once it is in (failed or not), else Dropped."""
        message = transaction.message
        if isinstance(message, MessageV0) and message.address_table_lookups:
            raise invalid_params("invalid transaction: devnet: address lookup tables are not served")
        if not self.blockhash_valid(message.recent_blockhash, self.working_slot):
            raise Dropped("BlockhashNotFound")
        if str(transaction.signatures[0]) in self.by_signature:
            raise Dropped("AlreadyProcessed")
        keys = list(message.account_keys)
        pre = [self.svm.get_balance(key) or 0 for key in keys]
        result = self.svm.send_transaction(transaction)
        post = [self.svm.get_balance(key) or 0 for key in keys]
        if isinstance(result, FailedTransactionMetadata):
            if post[0] >= pre[0]:  # not even the fee was charged: the transaction did not load
                raise Dropped(_error_json(result))
            meta, err = result.meta(), _error_json(result)
        else:
            meta, err = result, None
        assert isinstance(meta, TransactionMetadata)
        return_data = meta.return_data()
        record = Record(
            transaction=transaction,
            slot=self.working_slot,
            index=len(self.pending),
            err=err,
            fee=pre[0] - post[0] if err is not None else meta.fee(),
            pre_balances=pre,
            post_balances=post,
            logs=list(meta.logs()),
            inner_instructions=_inner_instructions(meta),
            units_consumed=meta.compute_units_consumed(),
            return_data=(
                {
                    "programId": str(return_data.program_id),
                    "data": [base64.b64encode(bytes(return_data.data)).decode(), "base64"],
                }
                if bytes(return_data.data)
                else None
            ),
            unit_price=compute_budget(message)[1],
        )
        self.pending.append(record)
        self.by_signature[record.signature] = record
        for key, before, lamports in zip(keys, pre, post, strict=True):
            self.by_address.setdefault(key, []).append(record)
            # First touched now: it had its balance before in every bank since genesis.
            history = self.balances.setdefault(key, [(GENESIS_SLOT, before)])
            if history[-1][1] != lamports:
                history.append((record.slot, lamports))
        return record

    def records_for(self, address: Pubkey, bank: int) -> list[Record]:
        """The transactions naming `address`, newest first, in the bank of slot `bank`."""
        records = [r for r in self.by_address.get(address, []) if r.slot <= bank]
        return sorted(records, key=lambda r: (r.slot, r.index), reverse=True)

    def slot_records(self, first: int, last: int) -> list[Slot]:
        return [self.slots[n] for n in range(max(first, GENESIS_SLOT), last + 1) if n in self.slots]


def preflight_failure(err: Any, *, logs: Sequence[str] = (), units: int = 0) -> RpcError:
    """-32002 with the simulation's result as its data, as Agave answers a failed preflight."""
    return RpcError(
        SEND_TRANSACTION_PREFLIGHT_FAILURE,
        f"Transaction simulation failed: {transaction_error_text(err)}",
        {
            "accounts": None,
            "err": err,
            "fee": None,
            "innerInstructions": None,
            "loadedAccountsDataSize": None,
            "loadedAddresses": None,
            "logs": list(logs),
            "postBalances": None,
            "postTokenBalances": None,
            "preBalances": None,
            "preTokenBalances": None,
            "replacementBlockhash": None,
            "returnData": None,
            "unitsConsumed": units,
        },
    )


def compute_budget(message: Message | MessageV0) -> tuple[int, int]:
    """The compute-unit limit and price (micro-lamports) `message` asks for, as the runtime reads them:
    SetComputeUnitLimit (2, u32) and SetComputeUnitPrice (3, u64), else the default limit (3,000 units a
    builtin instruction, 200,000 any other; at most 1,400,000) and price 0."""
    keys = list(message.account_keys)
    limit: int | None = None
    price = 0
    default = 0
    for instruction in message.instructions:
        program = keys[instruction.program_id_index]
        data = bytes(instruction.data)
        if program == COMPUTE_BUDGET_PROGRAM and data[:1] == b"\x02" and len(data) == 5:
            limit = struct.unpack("<I", data[1:])[0]
        elif program == COMPUTE_BUDGET_PROGRAM and data[:1] == b"\x03" and len(data) == 9:
            price = struct.unpack("<Q", data[1:])[0]
        default += DEFAULT_BUILTIN_UNITS if program in BUILTINS else DEFAULT_PROGRAM_UNITS
    return min(default if limit is None else limit, MAX_COMPUTE_UNITS), price


def _error_json(failed: FailedTransactionMetadata) -> Any:
    """The failure's TransactionError as Agave's JSON writes it (serde: "Name" or {"Name": value})."""
    return json.loads(failed.to_json())["err"]


def _inner_instructions(meta: TransactionMetadata) -> list[dict[str, Any]]:
    """Agave's innerInstructions: only the top-level instructions that made inner ones, by index."""
    answer = []
    for index, inner in enumerate(meta.inner_instructions()):
        if inner:
            answer.append(
                {
                    "index": index,
                    "instructions": [
                        {
                            "programIdIndex": item.instruction().program_id_index,
                            "accounts": list(bytes(item.instruction().accounts)),
                            "data": Base58Encoder.Encode(bytes(item.instruction().data)),
                            "stackHeight": item.stack_height(),
                        }
                        for item in inner
                    ],
                }
            )
    return answer
