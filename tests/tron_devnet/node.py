"""The devnet's chain: genesis (faucet, named accounts, the TRC-20), the pending pool, broadcast with
TRON's checks in java-tron's order, block production on demand (3 s a block on the devnet's clock), the
solidified height (head - 19) and forks that drop unsolidified blocks.

A broadcast transaction is executed at once against the pending state (as java-tron pre-executes into its
pending pool) and sealed into the next mined block; a fork drops the blocks and the pending transactions."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_abi import encode as abi_encode
from eth_utils import keccak

from tests.tron_devnet import actuators
from tests.tron_devnet.encoding import (
    SCHEMAS,
    DecodeError,
    contract_type,
    contract_value,
    encode,
    from_evm,
    make_raw,
    raw_decode,
    raw_encode,
    raw_from_json,
    transaction_size,
)
from tests.tron_devnet.evm import Evm
from tests.tron_devnet.keys import Key, recover
from tests.tron_devnet.ledger import PARAMETERS, RESULT_BYTES, SUN, Ledger, Refused

GENESIS_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
BLOCK_MS = 3_000
SOLIDIFY = 19  # java-tron: a block is solid once 70% of the 27 SRs built on it; here always head - 19
EXPIRATION_MS = 60_000
MAX_EXPIRATION_MS = 86_400_000
TAPOS_WINDOW = 65_536
ACCOUNTS = ("alice", "bob", "carol")
TOKEN_JSON = Path(__file__).resolve().parent / "contracts" / "tether_token.json"
TOKEN = {"name": "Tether USD", "symbol": "USDT", "decimals": 6}
TRANSFER_TOPIC = keccak(text="Transfer(address,address,uint256)")

SCHEMAS["BlockHeaderRaw"] = {
    "timestamp": (1, "int"),
    "txTrieRoot": (2, "bytes"),
    "parentHash": (3, "bytes"),
    "number": (7, "int"),
    "witness_address": (9, "bytes"),
    "version": (10, "int"),
}


def selector(signature: str) -> bytes:
    return keccak(text=signature)[:4]


@dataclass
class Record:
    txid: str
    raw_bytes: bytes
    signatures: list[bytes]
    raw: dict[str, Any]
    outcome: actuators.Outcome
    net_usage: int = 0
    net_fee: int = 0
    memo_fee: int = 0
    block: int | None = None
    block_time: int = 0

    @property
    def fee(self) -> int:
        return self.outcome.fee + self.net_fee + self.memo_fee


@dataclass
class Block:
    number: int
    id: bytes
    parent: bytes
    timestamp: int
    tx_root: bytes
    records: list[Record]
    evm_root: bytes
    accounts: dict[bytes, Any] = field(repr=False)


class Devnet:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.evm = Evm()
        self.ledger = Ledger()
        self.faucet = Key.from_seed("faucet")
        self.witness = Key.from_seed("witness")
        self.keys = {name: Key.from_seed(name) for name in ACCOUNTS}
        self.pending: list[Record] = []
        self.index: dict[str, Record] = {}
        self._built = 0
        self.ledger.create(self.faucet.raw_address, GENESIS_MS).balance = 1_000_000_000 * SUN
        for key in self.keys.values():
            self.ledger.create(key.raw_address, GENESIS_MS).balance = 100_000 * SUN
        self.token = self._deploy_token()
        self.blocks: list[Block] = []
        self._seal([], GENESIS_MS)
        self.last_time = GENESIS_MS

    def _deploy_token(self) -> bytes:
        fixture = json.loads(TOKEN_JSON.read_text())
        supply = 1_000_000_000 * 10 ** TOKEN["decimals"]
        args = abi_encode(
            ["uint256", "string", "string", "uint8"], [supply, TOKEN["name"], TOKEN["symbol"], 6]
        )
        owner = self.faucet.raw_address[1:]
        made = self.evm.execute(owner, None, bytes.fromhex(fixture["bytecode"][2:]) + args, 10_000_000)
        assert made.success and made.created, made.error
        for key in self.keys.values():
            call = selector("transfer(address,uint256)")
            call += abi_encode(["address", "uint256"], [key.raw_address[1:], 10_000 * 10**6])
            assert self.evm.execute(owner, made.created, call, 1_000_000).success
        return from_evm(made.created)

    # --- blocks ---------------------------------------------------------------------------------------

    @property
    def head(self) -> Block:
        return self.blocks[-1]

    @property
    def solid_number(self) -> int:
        return max(self.head.number - SOLIDIFY, 0)

    def _seal(self, records: list[Record], timestamp: int) -> Block:
        number = len(self.blocks)
        parent = self.blocks[-1].id if self.blocks else b"\0" * 32
        tx_root = (
            hashlib.sha256(b"".join(bytes.fromhex(r.txid) for r in records)).digest()
            if records
            else b"\0" * 32
        )
        header = {
            "timestamp": timestamp,
            "txTrieRoot": tx_root,
            "parentHash": parent,
            "number": number,
            "witness_address": self.witness.raw_address,
            "version": 30,
        }
        block_id = number.to_bytes(8, "big") + hashlib.sha256(encode(header, "BlockHeaderRaw")).digest()[8:]
        for record in records:
            record.block, record.block_time = number, timestamp
        block = Block(
            number, block_id, parent, timestamp, tx_root, records, self.evm.commit(), self.ledger.snapshot()
        )
        self.blocks.append(block)
        return block

    def mine(self, blocks: int = 1, skip_ms: int = 0) -> Block:
        """Produce `blocks` blocks, the first with every pending transaction; `skip_ms` moves the clock on
        before the first (missed slots)."""
        with self.lock:
            for n in range(blocks):
                self.last_time = self.last_time + BLOCK_MS + (skip_ms if n == 0 else 0)
                records, self.pending = self.pending, []
                self._seal(records, self.last_time)
                self._built = 0
            return self.head

    def fork(self, depth: int) -> list[str]:
        """Drop the last `depth` blocks (never a solid one) and the pending pool; the txids dropped. The
        next blocks get new ids: the clock never runs back."""
        with self.lock:
            if depth < 0 or self.head.number - depth < self.solid_number or depth > self.head.number:
                raise ValueError(
                    f"depth must be 0..{self.head.number - self.solid_number} (unsolidified blocks)"
                )
            dropped = [
                r for block in self.blocks[len(self.blocks) - depth :] for r in block.records
            ] + self.pending
            del self.blocks[len(self.blocks) - depth :]
            self.pending = []
            for record in dropped:
                del self.index[record.txid]
            self.evm.restore(self.head.evm_root)
            self.ledger.restore(self.head.accounts)
            return [r.txid for r in dropped]

    def block(self, number: int) -> Block | None:
        return self.blocks[number] if 0 <= number < len(self.blocks) else None

    # --- building (createtransaction, triggersmartcontract, ...) ---------------------------------------

    def build(self, kind: str, value: dict[str, Any], *, fee_limit: int = 0, data: bytes = b"") -> bytes:
        """Unsigned raw_data bytes with TAPOS from the head and expiration = head time + 60 s, after the
        contract's own checks (java-tron refuses to build what it would refuse to run)."""
        with self.lock:
            raw = make_raw(
                kind,
                value,
                ref_block_bytes=self.head.number.to_bytes(8, "big")[6:8],
                ref_block_hash=self.head.id[8:16],
                expiration=self.head.timestamp + EXPIRATION_MS,
                data=data,
                timestamp=self.head.timestamp + self._built,  # distinct txids for equal requests
                fee_limit=fee_limit,
            )
            self._built += 1
            owner = self.ledger.get(value.get("owner_address", b""))
            actuators.check(self.ledger, self.evm, kind, value, raw, owner.balance if owner else 0)
            return raw_encode(raw)

    # --- broadcast ------------------------------------------------------------------------------------

    def broadcast(self, transaction: dict[str, Any]) -> dict[str, Any]:
        """java-tron's answer to broadcasttransaction."""
        try:
            raw_bytes = _raw_bytes(transaction)
            signatures = [bytes.fromhex(s) for s in transaction.get("signature", [])]
            raw = raw_decode(raw_bytes)
        except (DecodeError, ValueError, KeyError, TypeError) as exc:
            return {"Error": f"class org.tron.core.exception.BadItemException : {exc}"}
        txid = hashlib.sha256(raw_bytes).hexdigest()
        with self.lock:
            try:
                self._push(txid, raw_bytes, raw, signatures)
            except Refused as refused:
                return {"code": refused.code, "txid": txid, "message": refused.message.encode().hex()}
        return {"result": True, "txid": txid}

    def _push(self, txid: str, raw_bytes: bytes, raw: dict[str, Any], signatures: list[bytes]) -> None:
        if txid in self.index:
            raise Refused("DUP_TRANSACTION_ERROR", "dup transaction")
        self._check_tapos(raw)
        expiration, head_time = raw.get("expiration", 0), self.head.timestamp
        if expiration <= head_time:
            raise Refused(
                "TRANSACTION_EXPIRATION_ERROR",
                f"Transaction expiration, transaction expiration time is {expiration}, "
                f"but headBlockTime is {head_time}",
            )
        if expiration > head_time + MAX_EXPIRATION_MS:
            raise Refused(
                "TRANSACTION_EXPIRATION_ERROR",
                f"Transaction expiration time is {expiration}, but it should be less than "
                f"{head_time + MAX_EXPIRATION_MS}",
            )
        kind, value = contract_type(raw), contract_value(raw)
        owner_address = value.get("owner_address", b"")
        if len(signatures) != 1:
            raise Refused("SIGERROR", "Validate signature error: miss sig or contract")
        signer = recover(bytes.fromhex(txid), signatures[0])
        if signer != owner_address:
            raise Refused(
                "SIGERROR",
                f"Validate signature error: {signer.hex() if signer else 'no key'} is signed by nobody "
                f"the owner {owner_address.hex()} permits",
            )
        owner = self.ledger.get(owner_address)
        if owner is None:
            raise actuators.refuse(f"Validate {kind} error, no OwnerAccount.")
        now = self.head.timestamp + BLOCK_MS  # the block this transaction goes into
        creates = kind == "AccountCreateContract" or (
            kind == "TransferContract" and self.ledger.get(value.get("to_address", b"")) is None
        )
        size = transaction_size(raw_bytes, signatures) + RESULT_BYTES
        charge = self.ledger.net_charge(owner, size, now, creates_account=creates)
        memo_fee = PARAMETERS["getMemoFee"] if raw.get("data") else 0
        actuators.check(self.ledger, self.evm, kind, value, raw, owner.balance - charge.fee - memo_fee)
        self.ledger.pay_net(owner, charge, now)
        owner.balance -= memo_fee
        outcome = actuators.apply(self.ledger, self.evm, kind, value, raw, now)
        record = Record(txid, raw_bytes, signatures, raw, outcome, charge.usage, charge.fee, memo_fee)
        self.pending.append(record)
        self.index[txid] = record

    def _check_tapos(self, raw: dict[str, Any]) -> None:
        ref_bytes, ref_hash = raw.get("ref_block_bytes", b""), raw.get("ref_block_hash", b"")
        if len(ref_bytes) == 2 and len(ref_hash) == 8:
            low = int.from_bytes(ref_bytes, "big")
            for block in self.blocks[-TAPOS_WINDOW:]:
                if block.number & 0xFFFF == low and block.id[8:16] == ref_hash:
                    return
        raise Refused(
            "TAPOS_ERROR",
            f"Tapos check error: no recent block {ref_bytes.hex()} with hash {ref_hash.hex()}",
        )

    # --- the faucet's own transactions (controls) -------------------------------------------------------

    def faucet_send(self, kind: str, value: dict[str, Any], *, fee_limit: int = 0) -> dict[str, Any]:
        value = dict(value, owner_address=self.faucet.raw_address)
        with self.lock:
            raw_bytes = self.build(kind, value, fee_limit=fee_limit)
            signed = {
                "raw_data_hex": raw_bytes.hex(),
                "signature": [self.faucet.sign_txid(hashlib.sha256(raw_bytes).digest()).hex()],
            }
            return self.broadcast(signed)

    def token_call(self, owner: bytes, data: bytes) -> bytes:
        """A read-only call of the token (balances in the devnet's own checks and tests)."""
        with self.lock:
            return self.evm.call(owner[1:], self.token[1:], data).output

    def stake(self, address: bytes, sun: int, resource: str) -> None:
        """Freeze `sun` of the account's balance for a resource at once (the stake control)."""
        with self.lock:
            account = self.ledger.get(address)
            if account is None or not 0 < sun <= account.balance:
                raise ValueError("the account must exist and hold what it stakes")
            self.ledger.stake(account, sun, resource)


def _raw_bytes(transaction: dict[str, Any]) -> bytes:
    """The bytes a transaction stands for: raw_data_hex, which the JSON raw_data must spell alike."""
    if "raw_data_hex" in transaction:
        raw_bytes = bytes.fromhex(transaction["raw_data_hex"])
        if "raw_data" in transaction and raw_encode(raw_from_json(transaction["raw_data"])) != raw_bytes:
            raise DecodeError("raw_data does not match raw_data_hex")
    else:
        raw_bytes = raw_encode(raw_from_json(transaction["raw_data"]))
    if transaction.get("txID") not in (None, hashlib.sha256(raw_bytes).hexdigest()):
        raise DecodeError("txID is not the sha256 of raw_data")
    return raw_bytes
