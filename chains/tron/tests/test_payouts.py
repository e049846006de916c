"""trx and trc20usdt withdrawals on the TRON devnet through the tron backend and the one payout pipeline:
paid once to the recipient, done only once their block is solidified, the fee actually burnt booked to the
house account; a re-sent transaction the node has counts as sent, a worker killed between store and send
pays once, an expired stored transaction is rebuilt once and only once, a short hot wallet holds the
payout with its reason, and a payout the node refuses is told apart from one that expired, which is
rebuilt."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from alerts.models import Alert, AlertStatus
from chains.backend import get_backend
from chains.base import Outcome, SignedTx
from chains.derivation import derive_internal_address
from chains.models import ChainTx, ChainTxStatus, HouseEntry
from chains.tron import payouts as tron_payouts
from chains.tron.backend import TronBackend
from chains.tron.signer import EXPIRED_MARGIN_MS, TronJournal, get_signer
from chains.tron.units import from_units
from payments.ledger import ledger_verify
from tests.chain import TronChain, fund
from tests.factories import CompanyFactory
from tests.tron_devnet.fixtures import tron_devnet  # noqa: F401
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

HOT = derive_internal_address("tron", 0)
SOLID = 19  # the devnet solidifies a block 19 blocks behind the head
SUN = 1_000_000


@pytest.fixture
def chain(settings, db, tron_devnet, monkeypatch) -> TronChain:  # noqa: F811
    running = TronChain(tron_devnet)
    # The in-process signer lives as long as the process; each test's database starts its withdrawal
    # references again from the first, so each test gets a journal of its own.
    monkeypatch.setattr(get_signer(), "journal", TronJournal())
    settings.CHAIN_BACKENDS = {"trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = running.nodes()
    running.keep_time()
    return running


def _head_time(devnet) -> int:
    return int(devnet.post("wallet/getnowblock")["block_header"]["raw_data"]["timestamp"])


def _withdraw(company, code: str, amount: str, to: str) -> Withdrawal:
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset=code, amount=Decimal(amount), to=to, tag="")]
    )
    return withdrawal


def _received(chain: TronChain, code: str, address: str) -> int:
    devnet = chain.devnet
    return devnet.token_balance(address) if code == "trc20usdt" else devnet.balance(address)


def _funded_hot(chain: TronChain) -> None:
    chain.devnet.fund(HOT, sun=500 * SUN, token=1000 * SUN)
    chain.mine()


@pytest.mark.parametrize(("code", "amount"), [("trx", "12.5"), ("trc20usdt", "25")])
def test_a_withdrawal_arrives_once_and_is_done_only_once_solidified_with_the_burnt_fee_booked(
    chain, code, amount
):
    _funded_hot(chain)
    bob = chain.devnet.accounts["bob"].address
    company = CompanyFactory()
    fund(company, code, "100")
    withdrawal = _withdraw(company, code, amount, bob)
    before = _received(chain, code, bob)

    payouts.payout_plan(code)
    payouts.payout_monitor(code, plan=False)  # the broadcast task's work: the stored bytes sent
    height = chain.mine()
    chain.mine(SOLID - 1)  # its block one short of the solidified height
    payouts.payout_monitor(code)

    withdrawal.refresh_from_db()
    chain_tx = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.PROCESSING, chain_tx.txid)
    assert chain.devnet.info_by_id(chain_tx.txid)["blockNumber"] == height

    chain.mine()
    payouts.payout_monitor(code)
    payouts.payout_monitor(code)

    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.DONE
    assert _received(chain, code, bob) - before == int(Decimal(amount) * SUN)
    burnt = from_units(int(chain.devnet.info_by_id(chain_tx.txid).get("fee", 0)))
    if code == "trc20usdt":
        assert burnt > 0  # energy with nothing staked
    booked = HouseEntry.objects.filter(chain_tx=chain_tx).values_list("amount", flat=True)
    assert list(booked) == ([burnt] if burnt else [])
    assert ledger_verify() == []


def test_a_payout_is_decided_by_solidification_not_by_the_count(chain, monkeypatch):
    _funded_hot(chain)
    company = CompanyFactory()
    fund(company, "trx", "100")
    withdrawal = _withdraw(company, "trx", "15", chain.devnet.accounts["bob"].address)
    payouts.payout_plan("trx")
    payouts.payout_monitor("trx", plan=False)
    chain.mine(SOLID + 5)  # solid, and past the asset's 20 confirmations
    real = TronBackend.tx_status
    not_final = lambda self, code, txid: dataclasses.replace(real(self, code, txid), final=False)  # noqa: E731
    monkeypatch.setattr(TronBackend, "tx_status", not_final)

    payouts.payout_monitor("trx")

    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.PROCESSING
    monkeypatch.setattr(TronBackend, "tx_status", real)
    payouts.payout_monitor("trx")
    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.DONE


def test_a_resent_transaction_the_node_has_counts_as_sent_and_pays_once(chain):
    _funded_hot(chain)
    bob = chain.devnet.accounts["bob"].address
    company = CompanyFactory()
    fund(company, "trc20usdt", "100")
    withdrawal = _withdraw(company, "trc20usdt", "17", bob)
    before = _received(chain, "trc20usdt", bob)
    payouts.payout_plan("trc20usdt")
    stored = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    signed = SignedTx(txid=stored.txid, raw=stored.raw, fee=stored.fee)
    backend = get_backend("trc20usdt")

    # A worker sent the stored bytes and was killed before it recorded the send: the retry sends again.
    assert backend.broadcast("trc20usdt", signed) == Outcome.ACCEPTED
    assert payouts.payout_broadcast(stored.pk) == Outcome.ALREADY_KNOWN
    chain.mine()
    assert backend.broadcast("trc20usdt", signed) in (Outcome.ALREADY_KNOWN, Outcome.ALREADY_MINED)
    chain.mine(SOLID)
    payouts.payout_monitor("trc20usdt")

    stored.refresh_from_db()
    withdrawal.refresh_from_db()
    assert (stored.status, stored.attempts) == (ChainTxStatus.CONFIRMED, 1)
    assert withdrawal.status == Withdrawal.Status.DONE
    assert _received(chain, "trc20usdt", bob) - before == 17 * SUN
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1


def test_an_expired_stored_transaction_is_rebuilt_once_and_only_once(chain, monkeypatch):
    _funded_hot(chain)
    bob = chain.devnet.accounts["bob"].address
    company = CompanyFactory()
    fund(company, "trx", "100")
    withdrawal = _withdraw(company, "trx", "13", bob)
    before = _received(chain, "trx", bob)
    payouts.payout_plan("trx")  # stored; the worker that would send it is lost
    expired = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    payouts.payout_monitor("trx", plan=False)  # before its expiration: only re-sent, never rebuilt
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1
    chain.devnet.fork(0)  # the node loses it from its pool before any block holds it
    chain.devnet.mine(skip_seconds=tron_payouts.EXPIRATION_MS // 1000 + 120)
    monkeypatch.setattr(get_signer(), "clock", lambda: _head_time(chain.devnet))  # the signer's time too

    payouts.payout_monitor("trx")  # closes it, and plans its withdrawal anew
    payouts.payout_monitor("trx", plan=False)  # the broadcast task's work
    payouts.payout_monitor("trx")

    txs = ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).order_by("pk")
    assert [tx.status for tx in txs] == [ChainTxStatus.FAILED, ChainTxStatus.BROADCAST]
    rebuilt = txs[1]
    assert txs[0].pk == expired.pk and rebuilt.txid != expired.txid
    assert txs[0].last_error.startswith("expired unmined")
    chain.mine(SOLID + 1)
    payouts.payout_monitor("trx")
    withdrawal.refresh_from_db()
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.DONE, rebuilt.txid)
    assert _received(chain, "trx", bob) - before == 13 * SUN
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 2


def test_a_payout_reverted_on_chain_is_rejected_once_solidified_and_its_burnt_fee_booked(chain):
    _funded_hot(chain)
    company = CompanyFactory()
    fund(company, "trc20usdt", "100")
    withdrawal = _withdraw(company, "trc20usdt", "20", chain.devnet.accounts["bob"].address)
    payouts.payout_plan("trc20usdt")  # signed and stored; then the token blacklists the hot address
    chain.devnet.blacklist(HOT)
    chain.mine()
    payouts.payout_monitor("trc20usdt", plan=False)  # sent
    chain_tx = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    chain.mine()  # its block
    chain.mine(SOLID - 1)
    payouts.payout_monitor("trc20usdt", plan=False)
    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.PROCESSING  # failed, in a block not solid yet

    chain.mine()
    payouts.payout_monitor("trc20usdt", plan=False)

    withdrawal.refresh_from_db()
    chain_tx.refresh_from_db()
    receipt = chain.devnet.info_by_id(chain_tx.txid)
    assert receipt["receipt"]["result"] == "REVERT"
    assert (withdrawal.status, chain_tx.status) == (Withdrawal.Status.REJECTED, ChainTxStatus.FAILED)
    assert withdrawal.reject_reason == "The transaction failed (REVERT) on chain."
    booked = HouseEntry.objects.get(chain_tx=chain_tx).amount
    assert booked == from_units(int(receipt["fee"])) > 0
    assert ledger_verify() == []


def test_a_token_payout_needing_more_than_the_fee_limit_cap_waits_with_the_reason(chain, settings):
    settings.CHAIN_NODES = chain.nodes(fee_limit_cap="0.5")
    _funded_hot(chain)
    company = CompanyFactory()
    fund(company, "trc20usdt", "100")
    withdrawal = _withdraw(company, "trc20usdt", "10", chain.devnet.accounts["bob"].address)

    payouts.payout_plan("trc20usdt")

    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.PROCESSING
    assert "over the configured fee_limit_cap 0.5 TRX" in withdrawal.blocked_reason
    assert not ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).exists()


def test_a_short_hot_wallet_holds_the_payout_with_the_reason(chain):
    company = CompanyFactory()
    fund(company, "trc20usdt", "100")
    withdrawal = _withdraw(company, "trc20usdt", "10", chain.devnet.accounts["bob"].address)

    payouts.payout_plan("trc20usdt")

    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.PROCESSING
    assert withdrawal.blocked_reason == f"The payout wallet is short: {HOT} holds 0.000000 trc20usdt"
    assert not ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).exists()


def test_a_refused_payout_is_expired_not_rejected_after_its_expiration_and_then_rebuilt(chain, monkeypatch):
    _funded_hot(chain)  # in the head block, which the payout's TAPOS names
    bob = chain.devnet.accounts["bob"].address
    company = CompanyFactory()
    fund(company, "trx", "100")
    withdrawal = _withdraw(company, "trx", "13", bob)
    before = _received(chain, "trx", bob)
    payouts.payout_plan("trx")
    stored = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    chain.devnet.fork(1)  # its reference block is gone: every node refuses it (TAPOS) until it expires
    _funded_hot(chain)
    key = f"trx:{stored.txid}"

    payouts.payout_monitor("trx")

    refused = Alert.objects.get(kind="payout_rejected", key=key, status=AlertStatus.OPEN)
    assert refused.message.endswith("it is re-sent, never rebuilt while it could still be mined")
    chain.devnet.mine(skip_seconds=tron_payouts.EXPIRATION_MS // 1000)  # past its expiration, by 6 s
    payouts.payout_monitor("trx")  # within the signer's margin: it is not closed yet
    stored.refresh_from_db()
    withdrawal.refresh_from_db()
    assert (stored.status, stored.last_error) == (ChainTxStatus.SIGNED, "expired")
    assert (withdrawal.status, withdrawal.blocked_reason) == (Withdrawal.Status.PROCESSING, "")
    assert Alert.objects.get(pk=refused.pk).count == 1  # not refused again, nothing else raised
    assert not Alert.objects.exclude(pk=refused.pk).filter(kind__startswith="payout_").exists()

    chain.devnet.mine(skip_seconds=EXPIRED_MARGIN_MS // 1000)
    monkeypatch.setattr(get_signer(), "clock", lambda: _head_time(chain.devnet))  # the signer's time too
    payouts.payout_monitor("trx")  # closed, and its withdrawal paid by a new transaction
    payouts.payout_monitor("trx", plan=False)
    chain.mine(SOLID + 1)
    payouts.payout_monitor("trx")

    withdrawal.refresh_from_db()
    assert Alert.objects.get(pk=refused.pk).status == AlertStatus.RESOLVED
    assert withdrawal.status == Withdrawal.Status.DONE and withdrawal.txid != stored.txid
    assert _received(chain, "trx", bob) - before == 13 * SUN
