"""ton withdrawals on the TON devnet through the ton backend, the TON signer and the one payout pipeline:
paid once, from the house wallet (deployed by its first payout), done once listed (a bounceable payment
once the recipient took it), the fee it paid booked to the house account; a worker killed between store
and send pays once; an expired message is rebuilt once and only once, and one whose seqno another message
used is never rebuilt; a bounced payout reopens its withdrawal for a person, who approves it (sent again
non-bounceable, once) or cancels it (rejected, the balance restored); an unrouted payment is refunded to its
sender once."""

from __future__ import annotations

import secrets
from decimal import Decimal

import pytest
from bip_utils import Bip39MnemonicGenerator
from pytoniq_core import Address

from alerts.models import Alert, AlertStatus
from chains.backend import get_backend
from chains.base import Outcome, SignedTx
from chains.models import ChainTx, ChainTxStatus, HouseEntry, UnroutedDeposit
from chains.ton import payouts as ton_payouts
from chains.ton import signer as ton_signer
from chains.ton.node import TonCenter
from chains.ton.signer import EXPIRED_MARGIN_SECONDS, TonSigner, private_key
from chains.ton.units import to_nanotons
from chains.ton.wallet import public_key_of, wallet_v4r2_address
from chains.unrouted import unrouted_refund
from payments.ledger import ledger_verify
from payments.models import Deposit
from tests.chain import TonChain, available, fund, webhook_statuses
from tests.factories import CompanyFactory
from tests.ton_devnet.fixtures import TonDevnet
from withdrawals import payouts
from withdrawals.approvals import withdrawal_approve, withdrawal_cancel
from withdrawals.bounces import ALERT_KIND, HOUSE_REASON, REASON
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

TON = 10**9
PAST_VALID_UNTIL = ton_payouts.VALID_SECONDS + EXPIRED_MARGIN_SECONDS + 5


@pytest.fixture
def chain(settings, db, ton_devnet: TonDevnet, monkeypatch) -> TonChain:
    """A house wallet of a fresh seed, its TON signer in-process (the journal its own), signing by the
    devnet's clock; the wallet funded but not deployed (its first payout deploys it)."""
    mnemonic = str(Bip39MnemonicGenerator().FromWordsNumber(24))
    running = TonChain(ton_devnet)
    running.seed = private_key(mnemonic)
    running.public_key = public_key_of(running.seed)
    running.house = wallet_v4r2_address(running.public_key).to_str(is_bounceable=False, is_url_safe=True)
    settings.CHAIN_BACKENDS = {"ton": "ton"}
    settings.CHAIN_NODES = running.nodes()
    settings.CHAIN_XPUBS = running.xpubs()
    signer = TonSigner(mnemonic, clock=ton_devnet.now)
    monkeypatch.setattr(ton_signer, "get_signer", lambda: signer)
    ton_devnet.fund(running.house, 50 * TON)
    running.scan()  # the cursor starts past the funding
    return running


def _withdraw(company, amount: str, to: str, tag: str = "order 7") -> Withdrawal:
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="ton", amount=Decimal(amount), to=to, tag=tag)]
    )
    return withdrawal


def _balance(client: TonCenter, address: str) -> int:
    return client.address_information(address).balance


def _received(chain: TonChain, address: str) -> list[int]:
    """The nanotons each payment from the house brought `address`, oldest first (the recipient pays its own
    fees, so its balance says less)."""
    house = Address(chain.house).to_str(is_user_friendly=False)
    found = chain.client.transactions(Address(address).to_str(is_user_friendly=False), limit=100)
    return [
        tx.in_msg.value
        for tx in reversed(found)
        if tx.in_msg is not None
        and tx.in_msg.source == house
        and not any(out.bounced for out in tx.out_msgs)  # sent back: not received
    ]


def _settle() -> None:
    """What the workers do after a plan: the broadcast task's send, then the monitor's look."""
    payouts.payout_monitor("ton", plan=False)
    payouts.payout_monitor("ton")


def _undeployed() -> str:
    """A bounceable address nobody deployed: a bounceable payment to it comes back."""
    return Address((0, secrets.token_bytes(32))).to_str(is_user_friendly=True, is_bounceable=True)


def test_a_withdrawal_arrives_once_is_done_once_listed_and_its_fee_is_booked(chain):
    company = CompanyFactory()
    fund(company, "ton", "100")
    withdrawal = _withdraw(company, "12.5", chain.customer)
    payouts.payout_plan("ton")
    _settle()
    payouts.payout_monitor("ton")

    withdrawal.refresh_from_db()
    [chain_tx] = ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal)
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.DONE, chain_tx.txid)
    assert chain_tx.status == ChainTxStatus.CONFIRMED
    assert _received(chain, chain.customer) == [to_nanotons(Decimal("12.5"))]
    [landed] = [tx for tx in chain.client.transactions(chain.customer, limit=5) if tx.in_msg.value][:1]
    assert (landed.in_msg.comment, landed.in_msg.parsed.bounce) == ("order 7", True)  # EQ…: bounceable
    assert chain_tx.fee_paid > 0
    assert list(HouseEntry.objects.filter(chain_tx=chain_tx).values_list("amount", flat=True)) == [
        chain_tx.fee_paid
    ]
    assert webhook_statuses("withdrawal", withdrawal.uid) == ["processing", "processing", "done"]
    assert chain.client.wallet_information(chain.house).seqno == 1  # deployed by its first payout
    assert ledger_verify() == []


def test_payouts_go_one_message_at_a_time_and_each_arrives_once(chain):
    company = CompanyFactory()
    fund(company, "ton", "100")
    first, second = _withdraw(company, "1", chain.customer), _withdraw(company, "2", chain.customer)
    before = _received(chain, chain.customer)

    payouts.payout_plan("ton")

    second.refresh_from_db()
    assert ChainTx.objects.count() == 1  # the second waits for the wallet's next seqno
    assert second.blocked_reason.startswith("Waiting for the house wallet's previous payout to settle")
    assert not Alert.objects.filter(kind="payout_wallet_busy").exists()  # it ends by itself
    for _ in range(3):
        _settle()

    for withdrawal in (first, second):
        withdrawal.refresh_from_db()
        assert withdrawal.status == Withdrawal.Status.DONE
    assert _received(chain, chain.customer)[len(before) :] == [TON, 2 * TON]
    assert ChainTx.objects.count() == 2


def test_a_worker_killed_between_store_and_send_pays_once(chain):
    company = CompanyFactory()
    fund(company, "ton", "100")
    withdrawal = _withdraw(company, "7", chain.customer)
    before = _received(chain, chain.customer)
    payouts.payout_plan("ton")  # stored; the worker that would send it is killed
    stored = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    assert stored.status == ChainTxStatus.SIGNED

    payouts.payout_monitor("ton", plan=False)  # the monitor sends the stored message
    signed = SignedTx(txid=stored.txid, raw=stored.raw, fee=stored.fee)
    assert get_backend("ton").broadcast("ton", signed) == Outcome.ALREADY_MINED  # sent again: it landed
    assert payouts.payout_broadcast(stored.pk) == Outcome.ALREADY_MINED
    payouts.payout_monitor("ton")

    stored.refresh_from_db()
    withdrawal.refresh_from_db()
    assert (stored.status, withdrawal.status) == (ChainTxStatus.CONFIRMED, Withdrawal.Status.DONE)
    assert _received(chain, chain.customer)[len(before) :] == [7 * TON]
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1


def test_an_expired_message_is_rebuilt_once_and_only_once(chain):
    company = CompanyFactory()
    fund(company, "ton", "100")
    withdrawal = _withdraw(company, "4", chain.customer)
    before = _received(chain, chain.customer)
    payouts.payout_plan("ton")  # stored, never sent
    expired = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    chain.devnet.advance(ton_payouts.VALID_SECONDS)  # past valid_until, within the margin
    assert not get_backend("ton").expired("ton", expired.raw)
    signed = SignedTx(txid=expired.txid, raw=expired.raw, fee=expired.fee)
    assert get_backend("ton").broadcast("ton", signed) == Outcome.EXPIRED  # the wallet refuses it
    chain.devnet.advance(EXPIRED_MARGIN_SECONDS + 5)

    payouts.payout_monitor("ton")  # closed, its withdrawal planned anew with the same, unused seqno
    _settle()
    _settle()

    txs = list(ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).order_by("pk"))
    assert [tx.status for tx in txs] == [ChainTxStatus.FAILED, ChainTxStatus.CONFIRMED]
    assert txs[0].pk == expired.pk and txs[0].last_error.startswith("expired unmined")
    withdrawal.refresh_from_db()
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.DONE, txs[1].txid)
    assert _received(chain, chain.customer)[len(before) :] == [4 * TON]
    assert get_backend("ton").broadcast("ton", signed) == Outcome.EXPIRED  # the old one never lands


def test_a_message_whose_seqno_another_message_used_is_never_rebuilt(chain):
    company = CompanyFactory()
    fund(company, "ton", "100")
    withdrawal = _withdraw(company, "3", chain.customer)
    before = _received(chain, chain.customer)
    payouts.payout_plan("ton")  # stored, never sent
    stored = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    chain.house_sends(chain.devnet.faucet, "1")  # the house key used elsewhere takes the seqno
    chain.devnet.advance(PAST_VALID_UNTIL)

    payouts.payout_monitor("ton")
    payouts.payout_monitor("ton")

    stored.refresh_from_db()
    withdrawal.refresh_from_db()
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.PROCESSING, "")
    assert stored.status == ChainTxStatus.SIGNED and stored.last_error == "expired"
    alert = Alert.objects.get(kind="payout_seqno_used", key=f"ton:{stored.txid}", status=AlertStatus.OPEN)
    assert "never rebuilt automatically" in alert.message
    assert _received(chain, chain.customer) == before


@pytest.fixture
def bounced(chain):
    """A bounceable payout to an undeployed wallet, sent: it bounced and its withdrawal was reopened."""
    company = CompanyFactory()
    fund(company, "ton", "100")
    recipient = _undeployed()
    withdrawal = _withdraw(company, "5", recipient)
    house_before = _balance(chain.client, chain.house)
    payouts.payout_plan("ton")
    _settle()
    withdrawal.refresh_from_db()
    return company, recipient, withdrawal, house_before


def test_a_bounced_payout_reopens_its_withdrawal_for_a_person(chain, bounced):
    _company, recipient, withdrawal, house_before = bounced

    chain.scan()

    [first] = ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal)
    assert first.status == ChainTxStatus.FAILED and first.last_error.startswith("bounced")
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.PROCESSING, "")
    assert withdrawal.blocked_reason == REASON and withdrawal.approval_required and not withdrawal.approved_at
    assert Alert.objects.get(kind=ALERT_KIND, key=f"ton:{first.txid}").status == AlertStatus.OPEN
    assert _balance(chain.client, recipient) == 0
    returned = house_before - _balance(chain.client, chain.house)
    assert 0 < returned < TON  # the 5 TON came back, less the fees
    assert HouseEntry.objects.get(chain_tx=first).amount == first.fee_paid
    assert Decimal(returned) / TON == first.fee_paid  # the whole cost is booked: fees and the bounce's
    # The bounce is no payment to the house: only the wallet's funding is a deposit (unrouted).
    assert list(Deposit.objects.values_list("amount", flat=True)) == [50]
    assert UnroutedDeposit.objects.count() == 1
    assert webhook_statuses("withdrawal", withdrawal.uid) == ["processing", "processing", "processing"]
    payouts.payout_monitor("ton")
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1  # held


def test_the_dashboard_says_a_bounced_withdrawal_bounced_not_that_a_policy_holds_it(chain, bounced, client):
    company, _recipient, withdrawal, _ = bounced
    client.force_login(company.owner)

    page = client.get(f"/dashboard/withdrawals/{withdrawal.uid}/").content.decode()

    assert "Its payment bounced" in page and "Approve to send it again non-bounceable" in page
    assert "above your approval threshold" not in page
    assert "sent once and bounced back; not sent again yet" in page
    assert 'data-testid="approve-form"' in page and 'data-testid="cancel-form"' in page


def test_a_bounced_payout_approved_arrives_non_bounceable_once(chain, bounced):
    company, recipient, withdrawal, _ = bounced

    withdrawal_approve(company=company, uid=withdrawal.uid)
    assert not Alert.objects.filter(kind=ALERT_KIND, status=AlertStatus.OPEN).exists()  # decided
    payouts.payout_plan("ton")
    _settle()
    _settle()

    withdrawal.refresh_from_db()
    _first, second = ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).order_by("pk")
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.DONE, second.txid)
    assert second.status == ChainTxStatus.CONFIRMED
    assert _received(chain, recipient) == [5 * TON]  # once: the bounced one is no payment
    [landed] = chain.client.transactions(Address(recipient).to_str(), limit=1)
    assert landed.in_msg.parsed.bounce is False and not landed.out_msgs  # kept by the undeployed account
    assert ledger_verify() == []


def test_a_bounced_payout_cancelled_is_rejected_and_the_balance_restored(chain, bounced):
    company, _recipient, withdrawal, _ = bounced
    assert available(company, "ton") < 100

    withdrawal_cancel(company=company, uid=withdrawal.uid)

    assert not Alert.objects.filter(kind=ALERT_KIND, status=AlertStatus.OPEN).exists()  # decided
    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.REJECTED
    assert available(company, "ton") == 100
    assert webhook_statuses("withdrawal", withdrawal.uid)[-1] == "rejected"
    payouts.payout_monitor("ton")
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1
    assert ledger_verify() == []


def test_an_unrouted_payment_is_refunded_to_its_sender_once(chain):
    txid = chain.pay("3", "no such invoice")
    chain.scan()
    unrouted = UnroutedDeposit.objects.get(deposit__txid=txid)
    before = _received(chain, chain.customer)

    unrouted_refund(unrouted_id=unrouted.pk, by="support")
    unrouted_refund(unrouted_id=unrouted.pk, by="support")  # a double click
    payouts.payout_plan("ton")
    _settle()
    _settle()

    unrouted.refresh_from_db()
    refund = Withdrawal.objects.get(uid=unrouted.refund_uid)
    assert (unrouted.status, refund.status) == ("refunded", Withdrawal.Status.DONE)
    assert Withdrawal.objects.filter(refund_deposit=unrouted.deposit).count() == 1
    assert _received(chain, chain.customer)[len(before) :] == [to_nanotons(refund.amount)]
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=refund).count() == 1
    assert ledger_verify() == []


def test_a_refund_of_an_unrouted_payment_that_bounces_opens_the_deposit_again(chain):
    txid = chain.pay("3", "no such invoice")
    chain.scan()
    unrouted = UnroutedDeposit.objects.get(deposit__txid=txid)
    nowhere = _undeployed()  # the operator typed an address nobody deployed, bounceable

    unrouted_refund(unrouted_id=unrouted.pk, by="support", to=nowhere)
    payouts.payout_plan("ton")
    _settle()
    _settle()

    unrouted.refresh_from_db()
    [refund] = Withdrawal.objects.filter(refund_deposit=unrouted.deposit)
    assert (refund.status, refund.reject_reason) == (Withdrawal.Status.REJECTED, HOUSE_REASON)
    assert unrouted.status == "open"  # the operator refunds it elsewhere, or assigns it
    assert _balance(chain.client, nowhere) == 0
    assert not Alert.objects.filter(kind=ALERT_KIND, status=AlertStatus.OPEN).exists()  # nobody to approve
    assert Alert.objects.get(kind="deposit_unrouted", key="ton").status == AlertStatus.OPEN
    assert ledger_verify() == []


def test_an_invoice_paid_and_a_withdrawal_made_over_http_on_the_devnet(chain, api, anon, merchant):
    """What an integrator sees through the API: the invoice `done` once its payment is listed, then a
    withdrawal of the credited balance `done` with the message hash the house wallet's transaction has."""
    created = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "Coffee", "price": "25"}], "isMerchantPaysFee": True},
        format="json",
    ).json()
    url = f"/api/invoices/v1/regular/{created['id']}"
    filled = anon.post(
        f"{url}/proceed", {"clientEmail": "client@example.com", "paymentCurrency": "ton"}, format="json"
    ).json()
    paid = chain.pay(filled["paymentDetails"]["amount"], filled["address"]["tag"])
    chain.scan()
    done = anon.get(url).json()

    asked = api.post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "ton", "amount": "2", "to": chain.customer, "tag": "thanks"}]},
        format="json",
    )
    [accepted] = asked.json()
    payouts.payout_plan("ton")
    _settle()
    payouts.payout_monitor("ton")
    withdrawal = api.get(f"/api/transactions/withdrawals/{accepted['uid']}").json()

    assert (filled["sandbox"], filled["address"]["address"]) == (False, chain.house)
    assert done["status"] == "done"
    assert [t["txHash"] for t in done["invoiceTransactions"]] == [paid]
    assert asked.status_code == 200 and accepted["success"] is True
    assert withdrawal["status"] == "done"
    assert withdrawal["txHash"] == ChainTx.objects.get(withdrawal_links__withdrawal__uid=accepted["uid"]).txid
    assert _received(chain, chain.customer) == [to_nanotons(Decimal("2"))]
    assert ledger_verify() == []
