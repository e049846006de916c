"""An in-memory NEAR node for unit tests of payouts and sweeps: final blocks, accounts with their access keys,
transactions sent and their outcomes as a test decides them; and a signer that signs what it is asked with
the development seed's keys (the policy is chains.near.policy's tests' business)."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field

import pytest

from chains.backend import get_backend
from chains.base import SignedTx, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.near import keys, payouts, transaction
from chains.near.backend import NearBackend
from chains.near.errors import NearTxRefused
from chains.near.results import FAILURE, SUCCESS, AccessKey, Account, Block, Outcome, TxResult
from chains.near.transaction import DeleteAccount, Transaction, Transfer

SEED = keys.seed_of(DEVELOPMENT_MNEMONIC)
HOT_KEY = keys.hot_key(SEED)
HOT = transaction.implicit_account(HOT_KEY[1])
NEAR = 10**24


def pool_account(index: int) -> str:
    return transaction.implicit_account(keys.pool_key(SEED, index)[1])


@dataclass
class FakeAccount:
    amount: int
    storage_usage: int = 182
    keys: dict[str, int] = field(default_factory=dict)  # "ed25519:..." -> nonce


class FakeNearNode:
    url = "http://127.0.0.1:3030"

    def __init__(self, *, height: int = 1_000, validity: int = 100, gas_price: int = 100_000_000) -> None:
        self.blocks: dict[str, Block] = {}
        self.height = 0
        self.validity, self.price = validity, gas_price
        self.accounts: dict[str, FakeAccount] = {}
        self.sent: list[bytes] = []
        self.refuse: str | None = None  # the InvalidTxError kind send_tx answers, when set
        self.results: dict[str, TxResult] = {}
        self.forget_before = 0  # blocks below this height are garbage collected
        self.advance(height)

    # --- the test's side -----------------------------------------------------------------------------

    def advance(self, blocks: int = 1) -> None:
        for _ in range(blocks):
            self.height += 1
            digest = hashlib.sha256(self.height.to_bytes(8, "big")).digest()
            self.blocks[transaction.b58encode(digest)] = Block(
                height=self.height,
                hash=transaction.b58encode(digest),
                prev_hash="",
                timestamp_ns=0,
                chunks=(),
            )

    def fund(self, account: str, yocto: int, key: bytes | None = None, nonce: int | None = None) -> None:
        """Pay `account` (an implicit one is created with its key, whose nonce starts at height x 10^6)."""
        if nonce is None:
            nonce = self.height * 10**6
        found = self.accounts.setdefault(account, FakeAccount(amount=0))
        found.amount += yocto
        public = (
            key if key is not None else bytes.fromhex(account) if transaction.is_implicit(account) else None
        )
        if public is not None:
            found.keys.setdefault(transaction.public_key_text(public), nonce)

    def land(self, txid: str | None = None, *, failure: str = "", final: bool = True, burnt: int = 0) -> str:
        """The sent transaction `txid` (the last sent by default) included at the final block, its actions
        applied when it succeeds."""
        tx = self.decoded(txid)
        txid = tx.txid()
        status = FAILURE if failure else SUCCESS
        head = self._final()
        outcome = Outcome(txid, head.hash, tx.signer_id, SUCCESS, "", burnt)
        receipt = Outcome("r" + txid[:20], head.hash, tx.receiver_id, status, failure, 0)
        level = "FINAL" if final else "EXECUTED_OPTIMISTIC"
        self.results[txid] = TxResult(txid, level, status, outcome, (receipt,))
        signer = self.accounts[tx.signer_id]
        signer.keys[transaction.public_key_text(tx.public_key)] = tx.nonce
        if not failure:
            self._apply(tx, burnt)
        return txid

    def decoded(self, txid: str | None = None) -> Transaction:
        for raw in reversed(self.sent):
            tx, _ = transaction.decode_signed(raw)
            if txid is None or tx.txid() == txid:
                return tx
        raise KeyError(txid)

    def _apply(self, tx: Transaction, burnt: int) -> None:
        signer = self.accounts[tx.signer_id]
        signer.amount -= burnt
        for action in tx.actions:
            if isinstance(action, Transfer):
                signer.amount -= action.deposit
                self.fund(tx.receiver_id, action.deposit)
            elif isinstance(action, DeleteAccount):
                self.fund(action.beneficiary_id, signer.amount)
                del self.accounts[tx.signer_id]

    def _final(self) -> Block:
        return next(b for b in self.blocks.values() if b.height == self.height)

    # --- what NearNode answers -----------------------------------------------------------------------

    def final_block(self) -> Block:
        return self._final()

    def block(self, block_id: int | str) -> Block | None:
        found = self.blocks.get(block_id) if isinstance(block_id, str) else None
        if found is None or found.height < self.forget_before:
            return None
        return found

    def genesis_validity(self) -> int:
        return self.validity

    def gas_price(self) -> int:
        return self.price

    def account(self, account_id: str, finality: str = "final") -> Account | None:
        found = self.accounts.get(account_id)
        if found is None:
            return None
        return Account(found.amount, 0, found.storage_usage, self.height)

    def access_key(self, account_id: str, public_key: str, finality: str = "final") -> AccessKey | None:
        found = self.accounts.get(account_id)
        if found is None or public_key not in found.keys:
            return None
        head = self._final()
        return AccessKey(found.keys[public_key], True, head.height, head.hash)

    def send_tx(self, signed: bytes) -> None:
        if self.refuse is not None:
            raise NearTxRefused("send_tx", "INVALID_TRANSACTION", {"InvalidTxError": {self.refuse: {}}}, "")
        self.sent.append(signed)

    def tx_status(self, tx_hash: str, sender: str) -> TxResult | None:
        return self.results.get(tx_hash)


class FakeSigner:
    """Signs every request with the development seed's key of its signer (the hot key, or pool key i)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, object]] = []

    def sign(self, unsigned: UnsignedTx) -> SignedTx:
        request = json.loads(unsigned.payload)
        self.requests.append(request)
        tx = Transaction.decode(base64.b64decode(request["tx"]))
        private = HOT_KEY[0] if request["purpose"] == "payout" else keys.pool_key(SEED, request["index"])[0]
        raw = transaction.sign(tx, private)
        return SignedTx(
            txid=tx.txid(), raw=raw.hex(), fee=unsigned.fee, sender=tx.signer_id, nonce=None
        )  # as NearSigner


BACKEND = "near"
NODES = {"near": {"url": FakeNearNode.url, "network": "private"}}
Near = tuple[NearBackend, FakeNearNode, FakeSigner]


@pytest.fixture
def near(settings, db, monkeypatch) -> Near:
    """The near backend on a fake node (the hot account: the development hot key's implicit account) and a
    signer of the development seed's keys."""
    settings.CHAIN_BACKENDS = {"near": BACKEND}
    settings.CHAIN_NODES = NODES
    settings.CHAIN_XPUBS = {}
    settings.EVM_SIGNER = "local"
    backend = get_backend("near")
    assert isinstance(backend, NearBackend)
    node, signer = FakeNearNode(), FakeSigner()
    monkeypatch.setattr(backend, "node", lambda code: node)
    monkeypatch.setattr(backend, "signer", lambda code: signer)
    monkeypatch.setattr(payouts, "_validity", {})  # read once per node: each test has its own
    return backend, node, signer
