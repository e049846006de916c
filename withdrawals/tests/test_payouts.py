"""The payout pipeline (withdrawals.payouts) on a scripted node that batches: many withdrawals in one
transaction, a short payout wallet, a fee over the cap, a node that is down, a conflict, a failure on chain.
The same pipeline runs against a real litecoind in chains/tests/test_bitcoincore_pipeline.py."""

from __future__ import annotations

import hashlib
import json
import logging
from decimal import Decimal

import pytest

from alerts.models import Alert, AlertStatus
from chains.base import (
    ChainUnavailable,
    FeeQuote,
    InsufficientFunds,
    Outcome,
    Payment,
    SignedTx,
    TxStatus,
    UnsignedTx,
)
from chains.models import ChainTx
from chains.sandbox import SandboxBackend
from core.money import number_text
from payments.ledger import ledger_verify
from tests.chain import fund
from withdrawals import payouts, services
from withdrawals.models import Withdrawal
from withdrawals.tests.conftest import ADDRESSES, balance, item, withdraw

PATH = "withdrawals.tests.test_payouts.ScriptedNode"


class ScriptedNode(SandboxBackend):
    """A node with a payout wallet of `wallet` coins that pays many outputs per transaction."""

    name = "scripted"
    max_outputs = 3
    wallet = Decimal(0)
    rate = Decimal("0.0001")
    cap = Decimal("0.001")
    down = False
    answer: Outcome | None = None  # what the next broadcasts answer instead of accepting
    mempool: dict[str, dict] = {}
    broadcasts: list[str] = []

    def quote_fee(self, code: str) -> FeeQuote:
        if self.down:
            raise ChainUnavailable("connection refused")
        return FeeQuote(rate=self.rate, unit="btc/kvB", source="scripted", over_cap=self.rate > self.cap)

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        total = sum((p.amount for p in payments), Decimal(0)) + fee.rate
        if total > self.wallet:
            raise InsufficientFunds(f"{number_text(self.wallet)} available, {number_text(total)} needed")
        body = json.dumps([[p.key, p.to, str(p.amount)] for p in payments])
        return UnsignedTx(code=code, payload=body, payments=tuple(payments), fee=fee.rate)

    def signer(self, code: str):
        return self

    def sign(self, tx: UnsignedTx) -> SignedTx:
        return SignedTx(txid=hashlib.sha256(tx.payload.encode()).hexdigest(), raw=tx.payload, fee=tx.fee)

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        type(self).broadcasts.append(tx.txid)
        if self.answer is not None:
            return self.answer
        if tx.txid in self.mempool:
            return Outcome.ALREADY_KNOWN
        type(self).wallet -= sum((Decimal(amount) for _, _, amount in json.loads(tx.raw)), tx.fee)
        self.mempool[tx.txid] = {"confirmations": 0, "failed": False}
        return Outcome.ACCEPTED

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        """A child with no payment (its change back to the wallet), paying `fee.rate`."""
        raw = json.dumps({"child of": txid})
        return SignedTx(txid=hashlib.sha256(raw.encode()).hexdigest(), raw="[]", fee=fee.rate)

    def tx_status(self, code: str, txid: str) -> TxStatus:
        found = self.mempool.get(txid)
        if found is None:
            return TxStatus(confirmations=0, known=False)
        return TxStatus(confirmations=found["confirmations"], known=True, failed=found["failed"])


@pytest.fixture
def node(settings):
    settings.CHAIN_BACKENDS = {"btc": PATH}
    ScriptedNode.wallet, ScriptedNode.rate, ScriptedNode.down, ScriptedNode.answer = (
        Decimal(0),
        Decimal("0.0001"),
        False,
        None,
    )
    ScriptedNode.mempool, ScriptedNode.broadcasts = {}, []
    return ScriptedNode


def _withdraw_many(api, merchant, count: int) -> list[str]:
    fund(merchant.company, "btc", "1")
    return [entry["uid"] for entry in withdraw(api, *[item("btc", "0.001") for _ in range(count)]).json()]


def _mine(node, confirmations: int) -> None:
    for entry in node.mempool.values():
        entry["confirmations"] = confirmations


@pytest.mark.django_db
def test_due_withdrawals_are_paid_in_batches_of_the_nodes_size_then_done(api, merchant, node):
    node.wallet = Decimal(1)
    uids = _withdraw_many(api, merchant, 7)

    payouts.payout_monitor("btc")  # plans and stores
    payouts.payout_monitor("btc")  # broadcasts what it stored
    stored = list(ChainTx.objects.order_by("pk"))
    _mine(node, 2)
    payouts.payout_monitor("btc")

    assert [tx.withdrawal_links.count() for tx in stored] == [3, 3, 1]
    assert {tx.status for tx in ChainTx.objects.all()} == {"confirmed"}
    withdrawals = Withdrawal.objects.filter(uid__in=uids)
    assert {w.status for w in withdrawals} == {"done"}
    assert {w.txid for w in withdrawals} == {tx.txid for tx in stored}
    assert node.wallet == Decimal(1) - Decimal("0.007") - 3 * node.rate
    assert ledger_verify() == []


@pytest.mark.django_db
def test_a_short_payout_wallet_holds_withdrawals_with_a_reason_and_an_alert_until_funded(api, merchant, node):
    uids = _withdraw_many(api, merchant, 2)

    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")

    waiting = Withdrawal.objects.filter(uid__in=uids)
    assert {(w.status, w.txid) for w in waiting} == {("processing", "")}
    assert {w.blocked_reason for w in waiting} == {"The payout wallet is short: 0 available, 0.0021 needed"}
    alert = Alert.objects.get(kind="payout_wallet_short", key="btc")
    assert (alert.status, alert.count) == (AlertStatus.OPEN, 2)
    assert not ChainTx.objects.exists()
    assert balance(merchant.company, "btc")[1] > 0  # still held: the merchant's money is real
    shown = api.get(f"/api/transactions/withdrawals/{uids[0]}").json()
    assert (shown["status"], shown["waitingReason"]) == ("processing", waiting[0].blocked_reason)

    node.wallet = Decimal(1)  # the operator funds the payout wallet
    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")
    _mine(node, 2)
    payouts.payout_monitor("btc")

    assert {(w.status, w.blocked_reason) for w in Withdrawal.objects.filter(uid__in=uids)} == {("done", "")}
    assert api.get(f"/api/transactions/withdrawals/{uids[0]}").json()["waitingReason"] is None
    assert Alert.objects.get(kind="payout_wallet_short").status == AlertStatus.RESOLVED


@pytest.mark.django_db
def test_a_fee_over_the_cap_holds_the_batch_until_it_falls(api, merchant, node):
    node.wallet, node.rate = Decimal(1), Decimal("0.01")
    (uid,) = _withdraw_many(api, merchant, 1)

    payouts.payout_monitor("btc")

    withdrawal = Withdrawal.objects.get(uid=uid)
    assert withdrawal.blocked_reason.startswith("Waiting for a lower network fee")
    assert Alert.objects.filter(kind="fee_over_cap", status=AlertStatus.OPEN).exists()
    assert not ChainTx.objects.exists()

    node.rate = Decimal("0.0002")
    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")
    assert Withdrawal.objects.get(uid=uid).txid
    assert ChainTx.objects.get().fee_rate == "0.0002 btc/kvB (scripted)"


@pytest.mark.django_db
def test_a_node_that_is_down_pauses_payouts_with_a_log_line_and_stores_nothing(api, merchant, node, caplog):
    node.wallet, node.down = Decimal(1), True
    (uid,) = _withdraw_many(api, merchant, 1)

    with caplog.at_level(logging.WARNING, logger="withdrawals.payouts"):
        payouts.payout_monitor("btc")

    assert any("payouts paused" in r.getMessage() for r in caplog.records)
    assert not ChainTx.objects.exists()
    node.down = False
    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")
    assert Withdrawal.objects.get(uid=uid).txid


@pytest.mark.django_db
def test_a_conflicting_broadcast_alerts_a_person_and_is_never_rebuilt(api, merchant, node):
    node.wallet, node.answer = Decimal(1), Outcome.CONFLICT
    (uid,) = _withdraw_many(api, merchant, 1)

    for _ in range(3):
        payouts.payout_monitor("btc")

    stored = ChainTx.objects.get()  # one plan only, re-sent as stored
    assert (stored.status, stored.last_error) == ("signed", "conflict")
    assert set(node.broadcasts) == {stored.txid}
    assert Alert.objects.get(kind="payout_conflict", key=f"btc:{stored.txid}").status == AlertStatus.OPEN
    assert Withdrawal.objects.get(uid=uid).txid == ""


@pytest.mark.django_db
def test_a_transaction_that_fails_on_chain_rejects_its_withdrawals_and_releases_the_holds(
    api, merchant, node
):
    node.wallet = Decimal(1)
    uids = _withdraw_many(api, merchant, 2)
    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")
    for entry in node.mempool.values():
        entry["failed"] = True

    payouts.payout_monitor("btc")

    assert {(w.status, w.reject_reason) for w in Withdrawal.objects.filter(uid__in=uids)} == {
        ("rejected", "The transaction failed on chain.")
    }
    assert ChainTx.objects.get().status == "failed"
    assert balance(merchant.company, "btc") == (Decimal(1), Decimal(0))
    assert ledger_verify() == []


@pytest.mark.django_db
def test_a_transaction_dropped_from_the_mempool_is_sent_again_byte_for_byte(api, merchant, node):
    node.wallet = Decimal(1)
    _withdraw_many(api, merchant, 1)
    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")
    stored = ChainTx.objects.get()
    node.mempool.clear()

    payouts.payout_monitor("btc")

    assert node.broadcasts == [stored.txid, stored.txid]
    assert ChainTx.objects.count() == 1
    assert ADDRESSES["btc"] in stored.raw


@pytest.mark.django_db
def test_a_payout_whose_inputs_another_transaction_spent_alerts_and_is_never_rebuilt(api, merchant, node):
    node.wallet = Decimal(1)
    (uid,) = _withdraw_many(api, merchant, 1)
    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")
    stored = ChainTx.objects.get()
    _mine(node, -2)  # a conflicting transaction confirmed instead

    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")

    assert ChainTx.objects.count() == 1 and node.broadcasts == [stored.txid]
    assert Alert.objects.get(kind="payout_conflict", key=f"btc:{stored.txid}").count == 2
    assert Withdrawal.objects.get(uid=uid).status == "processing"


@pytest.mark.django_db
def test_a_stored_payout_whose_withdrawal_was_rejected_before_sending_is_abandoned_and_the_rest_replanned(
    api, merchant, node
):
    node.wallet = Decimal(1)
    first, second = _withdraw_many(api, merchant, 2)
    (stored_id,) = payouts.payout_plan("btc")  # both in one stored transaction, not sent yet
    services.withdrawal_reject(uid=first, reason="Refused by a person.")

    payouts.payout_monitor("btc")  # abandons it, plans the other again
    payouts.payout_monitor("btc")  # sends the new one

    assert ChainTx.objects.get(pk=stored_id).status == "failed"
    replacement = ChainTx.objects.exclude(pk=stored_id).get()
    assert node.broadcasts == [replacement.txid]
    assert [link.withdrawal.uid for link in replacement.withdrawal_links.all()] == [second]
    assert Withdrawal.objects.get(uid=second).txid == replacement.txid
    assert Withdrawal.objects.get(uid=first).status == "rejected"
    assert ledger_verify() == []


@pytest.mark.django_db
def test_a_withdrawal_the_node_refuses_to_pay_waits_with_the_reason_and_never_holds_back_the_others(
    api, merchant, node, monkeypatch
):
    node.wallet = Decimal(1)
    refused = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"  # valid here; this node will not pay it
    build = ScriptedNode.build

    def picky(self, code, payments, fee):
        if any(payment.to == refused for payment in payments):
            raise RuntimeError("-5: Invalid address")
        return build(self, code, payments, fee)

    monkeypatch.setattr(ScriptedNode, "build", picky)
    fund(merchant.company, "btc", "1")
    bad, good = (
        e["uid"] for e in withdraw(api, item("btc", "0.001", to=refused), item("btc", "0.002")).json()
    )

    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")

    assert Withdrawal.objects.get(uid=good).txid
    waiting = Withdrawal.objects.get(uid=bad)
    assert (waiting.status, waiting.txid) == ("processing", "")
    assert waiting.blocked_reason == "The node refuses this payout: -5: Invalid address"
    assert Alert.objects.filter(kind="payout_refused", key="btc", status=AlertStatus.OPEN).exists()


@pytest.mark.django_db
def test_a_stuck_payout_gets_one_child_which_follows_its_parent_and_never_decides_the_withdrawal(
    api, merchant, node, settings
):
    settings.PAYOUT_BUMP_AFTER_SECONDS = 0
    node.wallet = Decimal(1)
    (uid,) = _withdraw_many(api, merchant, 1)
    payouts.payout_monitor("btc")
    payouts.payout_monitor("btc")
    parent = ChainTx.objects.get()

    payouts.payout_monitor("btc")  # stuck: the scripted node has no replacement, so a child
    payouts.payout_monitor("btc")  # still stuck: no second child

    child = ChainTx.objects.get(replaces=parent)
    assert (child.kind, ChainTx.objects.count()) == ("child", 2)
    assert node.broadcasts == [parent.txid, child.txid]
    assert Withdrawal.objects.get(uid=uid).txid == parent.txid

    node.mempool.clear()  # both evicted: the parent goes out again first, then its child
    payouts.payout_monitor("btc")
    assert node.broadcasts[2:] == [parent.txid, child.txid]

    _mine(node, -1)  # a conflicting transaction confirmed instead of the parent (and so of its child)
    payouts.payout_monitor("btc")

    child.refresh_from_db()
    assert child.status == "failed"
    assert not Alert.objects.filter(key=f"btc:{child.txid}").exists()  # the parent's alert is the one
    assert Alert.objects.filter(kind="payout_conflict", key=f"btc:{parent.txid}").exists()
    assert Withdrawal.objects.get(uid=uid).status == "processing"
