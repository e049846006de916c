"""The settled watch (chains.settled) on a scripted node: what it checks, how often it tells a person, and
that one record it cannot check never stops the others. The same watch runs against a real litecoind in
test_bitcoincore_pipeline.py and on an EVM chain in chains/evm/tests/test_evm_pipeline.py."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.test import override_settings

from alerts.models import Alert, AlertStatus
from chains.base import BlockRef, Outcome, SignedTx, TxStatus
from chains.models import ChainTx, ChainTxStatus
from chains.sandbox import SandboxBackend
from chains.settled import settled_watch
from payments.models import Deposit
from tests.factories import DepositFactory

pytestmark = pytest.mark.django_db
CODE = "btc"
TIP = 300


class ScriptedNode(SandboxBackend):
    """A node whose best chain holds the blocks in `canonical` and whose transactions are in `txs`."""

    name = "scripted"
    canonical: set[str] = set()
    txs: dict[str, TxStatus] = {}
    asked: list[str] = []
    sent: list[SignedTx] = []
    broken: set[str] = set()

    def tip(self, code: str) -> BlockRef:
        return BlockRef(TIP, f"h{TIP}")

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        return block.hash in self.canonical

    def tx_status(self, code: str, txid: str) -> TxStatus:
        self.asked.append(txid)
        if txid in self.broken:
            raise RuntimeError("the node answered nonsense")
        return self.txs.get(txid, TxStatus(confirmations=0, known=False))

    deposit_status = tx_status

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        self.sent.append(tx)
        self.txs[tx.txid] = TxStatus(confirmations=0, known=True)  # in the mempool again
        return Outcome.ACCEPTED


@pytest.fixture
def node(settings):
    settings.CHAIN_BACKENDS = {CODE: "chains.tests.test_settled.ScriptedNode"}
    ScriptedNode.canonical, ScriptedNode.txs, ScriptedNode.broken = set(), {}, set()
    ScriptedNode.asked, ScriptedNode.sent = [], []
    return ScriptedNode


def _payout(txid: str, height: int) -> ChainTx:
    return ChainTx.objects.create(
        code=CODE,
        txid=txid,
        raw=f"raw-of-{txid}",
        fee=Decimal("0.0001"),
        status=ChainTxStatus.CONFIRMED,
        block_height=height,
        block_hash=f"h{height}",
    )


def test_a_reversed_payout_is_told_once_resent_each_round_and_resolved_when_mined_again(node):
    chain_tx = _payout("p1", TIP - 10)

    settled_watch(CODE)
    node.txs.pop("p1")  # the node lost it again (a restart with no mempool)
    settled_watch(CODE)

    assert [(tx.txid, tx.raw) for tx in node.sent] == [("p1", "raw-of-p1")] * 2  # the stored bytes
    alert = Alert.objects.get(kind="payout_reversed")
    assert (alert.key, alert.count, alert.status) == (f"{CODE}:p1", 1, AlertStatus.OPEN)

    node.txs["p1"] = TxStatus(confirmations=1, known=True, block=BlockRef(TIP, "h-new"))
    settled_watch(CODE)

    chain_tx.refresh_from_db()
    assert (chain_tx.reversed_at, chain_tx.block_height, chain_tx.block_hash) == (None, TIP, "h-new")
    assert Alert.objects.get(kind="payout_reversed").status == AlertStatus.RESOLVED


def test_what_is_still_in_its_block_or_outside_the_window_is_not_asked_for(node):
    node.canonical = {f"h{TIP - 5}"}
    _payout("kept", TIP - 5)
    _payout("old", TIP - django_settings.CHAIN_SETTLED_WATCH_BLOCKS["btc"] - 1)

    settled_watch(CODE)

    assert node.asked == [] and node.sent == []
    assert not Alert.objects.exists()


def test_a_settled_transaction_back_in_the_mempool_is_left_to_be_mined(node):
    _payout("p1", TIP - 3)
    node.txs["p1"] = TxStatus(confirmations=0, known=True)

    settled_watch(CODE)

    assert node.sent == [] and not Alert.objects.exists()


def test_a_credited_deposit_taken_back_is_alerted_once_and_never_debited(node):
    with override_settings(CHAIN_BACKENDS={}):  # paid and credited on the sandbox chain
        deposit = DepositFactory(confirm=True)
    credited = deposit.company.accounts.get(code=CODE).available
    Deposit.objects.filter(pk=deposit.pk).update(block_height=TIP - 2, block_hash="gone")

    settled_watch(CODE)
    settled_watch(CODE)

    deposit.refresh_from_db()
    assert deposit.status == Deposit.Status.CONFIRMED and deposit.reversed_at is not None
    assert Alert.objects.get(kind="deposit_reversed").count == 1
    assert deposit.company.accounts.get(code=CODE).available == credited == Decimal("0.01")


def test_one_record_that_cannot_be_checked_never_stops_the_others(node, caplog):
    _payout("bad", TIP - 2)
    _payout("good", TIP - 1)
    node.broken = {"bad"}

    with caplog.at_level(logging.ERROR, logger="chains.settled"):
        settled_watch(CODE)

    assert Alert.objects.get(kind="payout_reversed").key == f"{CODE}:good"
    assert any("could not check payout bad" in r.getMessage() for r in caplog.records)


def test_the_settled_watch_runs_on_beat():
    entry = django_settings.CELERY_BEAT_SCHEDULE["chain-settled-watch"]
    assert entry["task"] == "chains.tasks.chain_settled_watch_all"


def test_a_payout_a_conflicting_spend_took_back_is_alerted_and_not_sent_again(node):
    _payout("p1", TIP - 4)
    node.txs["p1"] = TxStatus(confirmations=-3, known=True)

    settled_watch(CODE)

    assert node.sent == []
    assert "conflicting transaction" in Alert.objects.get(kind="payout_reversed").message
