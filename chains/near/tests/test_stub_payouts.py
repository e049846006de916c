"""near withdrawals and sweeps on the NEAR JSON-RPC stub through the near backend, its signer and the one
payout pipeline: a withdrawal arrives once (also when the worker is killed between store and send) and is
done only once final, its fee booked to the house; a stored transaction whose block hash is too old and
never landed is rebuilt once; a paid invoice's account is swept into the hot account by one DeleteAccount,
which lands once; a late payment to a deleted account makes it again and is credited and swept again."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chains.backend import get_backend
from chains.base import Outcome, SignedTx
from chains.models import ChainTx, ChainTxStatus, HouseEntry, Sweep
from chains.near.signer import NearJournal, get_signer
from chains.near.sweeps import near_sweep
from chains.near.units import from_yocto
from invoices.models import Invoice
from payments.ledger import ledger_verify
from payments.models import Deposit
from tests.chain import NearChain, available, fund
from tests.factories import CompanyFactory, InvoiceFactory
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

FINAL = NearChain.FINAL_BLOCKS
NEAR = 10**24
RECIPIENT = "bob.near"


@pytest.fixture
def chain(settings, db, make_near_devnet, monkeypatch) -> NearChain:
    running = NearChain(make_near_devnet(validity=30))
    running.devnet.account(RECIPIENT, NEAR)
    settings.CHAIN_BACKENDS = {"near": "near"}
    settings.CHAIN_NODES = running.nodes()
    settings.CHAIN_XPUBS = {}
    # The in-process signer lives as long as the process; each test has its own stub and database.
    monkeypatch.setattr(get_signer(), "journal", NearJournal())
    running.scan()
    return running


def _withdraw(amount: str, to: str = RECIPIENT) -> Withdrawal:
    company = CompanyFactory()
    fund(company, "near", "100")
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="near", amount=Decimal(amount), to=to, tag="")]
    )
    return withdrawal


def test_a_withdrawal_arrives_once_and_is_done_only_once_final_with_the_fee_booked(chain):
    withdrawal = _withdraw("2.5")
    before = chain.devnet.balance(RECIPIENT)

    payouts.payout_plan("near")
    payouts.payout_monitor("near", plan=False)  # the broadcast task's work: the stored bytes sent
    chain.devnet.produce(FINAL - 2)
    payouts.payout_monitor("near")
    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.PROCESSING

    chain.devnet.produce(2)
    payouts.payout_monitor("near")
    payouts.payout_monitor("near")

    withdrawal.refresh_from_db()
    chain_tx = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    assert withdrawal.status == Withdrawal.Status.DONE and chain_tx.status == ChainTxStatus.CONFIRMED
    assert chain.devnet.balance(RECIPIENT) - before == 25 * NEAR // 10
    assert chain_tx.fee_paid is not None and chain_tx.fee_paid > 0
    assert list(HouseEntry.objects.filter(chain_tx=chain_tx).values_list("amount", flat=True)) == [
        chain_tx.fee_paid
    ]
    assert ledger_verify() == []


def test_a_worker_killed_between_store_and_send_pays_once(chain):
    withdrawal = _withdraw("2")
    before = chain.devnet.balance(RECIPIENT)
    payouts.payout_plan("near")  # stored; the worker that would send it is lost
    stored = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    assert stored.status == ChainTxStatus.SIGNED

    payouts.payout_monitor("near")  # finds it unsent, and sends the stored bytes
    chain.devnet.produce(1)
    signed = SignedTx(txid=stored.txid, raw=stored.raw, fee=stored.fee, sender=stored.sender)
    # nearcore answers a transaction it already has with its outcome: sent, never run twice
    assert get_backend("near").broadcast("near", signed) in (Outcome.ACCEPTED, Outcome.ALREADY_MINED)
    chain.devnet.produce(FINAL)
    payouts.payout_monitor("near")
    payouts.payout_monitor("near")

    stored.refresh_from_db()
    withdrawal.refresh_from_db()
    assert stored.status == ChainTxStatus.CONFIRMED and withdrawal.status == Withdrawal.Status.DONE
    assert chain.devnet.balance(RECIPIENT) - before == 2 * NEAR
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1


def test_a_stored_transaction_whose_block_hash_expired_unsent_is_rebuilt_once(chain):
    withdrawal = _withdraw("3")
    before = chain.devnet.balance(RECIPIENT)
    payouts.payout_plan("near")  # stored, never sent: it never lands
    first = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    chain.devnet.produce(45)  # the stub's validity is 30 blocks
    signed = SignedTx(txid=first.txid, raw=first.raw, fee=first.fee, sender=first.sender)
    assert get_backend("near").broadcast("near", signed) == Outcome.EXPIRED

    payouts.payout_monitor("near")  # closes it, and plans its withdrawal anew
    payouts.payout_monitor("near", plan=False)
    chain.devnet.produce(FINAL)
    payouts.payout_monitor("near")
    payouts.payout_monitor("near")

    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.DONE
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 2
    assert chain.devnet.balance(RECIPIENT) - before == 3 * NEAR


def test_a_paid_account_is_swept_by_one_delete_account_and_a_late_payment_again(chain):
    invoice = InvoiceFactory(code="near", total="10")
    account = invoice.deposit_address.address
    chain.pay(invoice.amount_due, account)
    chain.scan(FINAL)
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    hot_before = chain.devnet.balance(chain.hot)

    near_sweep("near")  # stored and sent
    near_sweep("near")  # nothing new: the one sweep is under way, its stored bytes at most re-sent
    chain.devnet.produce(FINAL)
    near_sweep("near")  # final: done

    [sweep] = Sweep.objects.filter(code="near")
    assert sweep.status == Sweep.Status.DONE
    assert chain.devnet.error("query", _view(account))["cause"]["name"] == "UNKNOWN_ACCOUNT"  # deleted
    gained = chain.devnet.balance(chain.hot) - hot_before
    assert 0 < invoice.amount_due * NEAR - gained < NEAR // 100  # all of it, less the deletion's gas
    assert ChainTx.objects.filter(kind=ChainTx.Kind.SWEEP).count() == 1

    chain.pay("1", account)  # late: the implicit account is made again
    chain.scan(FINAL)
    assert Deposit.objects.filter(address=account, status="confirmed").count() == 2
    near_sweep("near")
    chain.devnet.produce(FINAL)
    near_sweep("near")
    assert list(Sweep.objects.filter(code="near").values_list("status", flat=True)) == ["done", "done"]
    assert available(invoice.company, "near") > 0 and ledger_verify() == []


def _view(account: str) -> dict[str, str]:
    return {"request_type": "view_account", "account_id": account, "finality": "final"}


def test_an_account_with_a_payment_pending_is_not_swept(chain):
    invoice = InvoiceFactory(code="near", total="10")
    account = invoice.deposit_address.address
    chain.pay(from_yocto(NEAR), account)  # part of it: the invoice waits for the rest
    chain.scan(FINAL)
    invoice.refresh_from_db()
    assert invoice.status != Invoice.Status.DONE

    near_sweep("near")

    assert not Sweep.objects.filter(code="near").exists()
