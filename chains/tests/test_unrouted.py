"""Unrouted deposits (chains.unrouted): a payment no invoice or static address owns is recorded, alerted and
counted, and only a person moves it on: assigned (credited once, with the owner's webhooks) or refunded
(the sender paid once, by a house payout). TON customers forgetting the comment is the most common TON
support ticket in public trackers; the sandbox's `ton` is one shared address and a comment per invoice."""

from __future__ import annotations

import importlib
from decimal import Decimal

import pytest
from django.apps import apps as django_apps

from alerts.models import Alert
from chains.deposit_reversals import deposit_reverse
from chains.house import house_fees
from chains.models import ClaimStatus, DepositClaim, UnroutedDeposit, UnroutedEvent
from chains.unrouted import ALERT, Target, open_final, unrouted_assign, unrouted_keep, unrouted_refund
from core.assets import get_asset
from core.errors import InvalidState, NotFound, ValidationFailed
from invoices.models import Invoice
from invoices.services import invoice_close
from payments.models import Deposit, LedgerEntry, SandboxTransaction
from security.models import AuditEvent
from tests.chain import available, mine, pay_address, send_payouts, webhook_statuses
from tests.factories import (
    DepositClaimFactory,
    InvoiceFactory,
    StaticDepositAddressFactory,
    UnroutedDepositFactory,
)
from webhooks.models import WebhookEvent
from withdrawals.models import Withdrawal
from withdrawals.services import withdrawal_sandbox_reject
from withdrawals.tests.conftest import ADDRESSES

pytestmark = pytest.mark.django_db
TON = get_asset("ton")
Status = UnroutedDeposit.Status


def _open_alert() -> Alert | None:
    return Alert.objects.filter(kind=ALERT, key="ton", status__in=["open", "acknowledged"]).first()


@pytest.fixture
def invoice(merchant) -> Invoice:  # type: ignore[no-untyped-def]
    """A pending TON invoice: the shared deposit address is known, its comment is the invoice's own."""
    return InvoiceFactory(company=merchant.company, code="ton")


# --- what is unrouted -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "reason"),
    [("", UnroutedDeposit.Reason.NO_TAG), ("999999", UnroutedDeposit.Reason.UNKNOWN_TAG)],
)
def test_a_ton_payment_without_its_comment_or_with_a_wrong_one_is_unrouted_and_credits_nobody(
    invoice, merchant, tag, reason
) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(tag=tag, amount=invoice.amount_due)

    invoice.refresh_from_db()
    assert (unrouted.reason, unrouted.status) == (reason, Status.OPEN)
    assert unrouted.deposit.deposit_address_id is None and unrouted.deposit.company_id is None
    assert invoice.status == Invoice.Status.PENDING
    assert available(merchant.company, "ton") == 0
    assert not LedgerEntry.objects.exists()


@pytest.mark.parametrize(
    ("tag", "reason"),
    [("", UnroutedDeposit.Reason.NO_TAG), ("42", UnroutedDeposit.Reason.UNKNOWN_TAG)],
)
def test_a_payment_to_the_shared_ton_address_before_any_ton_invoice_is_a_tag_problem(tag, reason) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(tag=tag)  # no invoice or static address of ton exists yet

    assert unrouted.reason == reason


def test_a_payment_to_an_address_that_is_no_deposit_address_is_unrouted() -> None:
    unrouted = UnroutedDepositFactory(address=ADDRESSES["ton"], tag="")

    assert unrouted.reason == UnroutedDeposit.Reason.UNKNOWN_ADDRESS


def test_the_wrong_asset_at_a_known_address_is_unrouted_against_that_merchant(merchant) -> None:  # type: ignore[no-untyped-def]
    usdc = InvoiceFactory(company=merchant.company, code="usdc")

    unrouted = UnroutedDepositFactory(code="eth", address=usdc.deposit_address.address, tag="", amount="0.1")

    assert unrouted.reason == UnroutedDeposit.Reason.WRONG_ASSET
    assert unrouted.deposit.company_id == merchant.company.pk
    assert available(merchant.company, "usdc") == available(merchant.company, "eth") == 0


def test_it_is_alerted_once_final_and_the_alert_counts_every_one() -> None:
    seen = UnroutedDepositFactory(confirm=False)
    assert _open_alert() is None  # not final: nothing a person can do yet

    mine("ton", TON.confirmations)
    UnroutedDepositFactory()

    alert = _open_alert()
    assert alert is not None and alert.count == 2
    assert "2 unrouted ton deposit(s)" in alert.message
    assert UnroutedEvent.objects.filter(unrouted=seen, action="record", by="kassa").exists()


def test_a_transfer_that_fails_on_chain_is_void_and_never_alerted() -> None:
    unrouted = UnroutedDepositFactory(outcome="fail")

    unrouted.refresh_from_db()
    assert unrouted.status == Status.VOID
    assert _open_alert() is None


# --- assign ---------------------------------------------------------------------------------------------


def test_assigning_to_an_invoice_makes_it_done_with_its_webhooks_once(invoice, merchant) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(tag="", amount=invoice.amount_due)
    DepositClaimFactory(company=merchant.company, txid=unrouted.deposit.txid)

    unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(invoice.pk)), by="ops@kassa.test")

    invoice.refresh_from_db()
    unrouted.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    assert webhook_statuses(WebhookEvent.Family.INVOICE, str(invoice.pk)) == [
        "created",
        "pending",
        "processing",
        "done",
    ]
    assert available(merchant.company, "ton") == invoice.amount_due - invoice.fee
    assert (unrouted.status, unrouted.assigned_to_id) == (Status.ASSIGNED, invoice.deposit_address_id)
    assert UnroutedEvent.objects.filter(unrouted=unrouted, action="assign", by="ops@kassa.test").exists()
    assert AuditEvent.objects.filter(company=merchant.company, action="deposit.assigned").exists()
    assert DepositClaim.objects.get().status == ClaimStatus.CREDITED
    assert _open_alert() is None  # none left: resolved


def test_a_second_assign_credits_nothing_and_another_target_is_refused(invoice, merchant) -> None:  # type: ignore[no-untyped-def]
    other = InvoiceFactory(company=merchant.company, code="ton")
    unrouted = UnroutedDepositFactory(tag="", amount=invoice.amount_due)
    target = Target("invoice", str(invoice.pk))
    unrouted_assign(unrouted_id=unrouted.pk, target=target, by="first")

    again = unrouted_assign(unrouted_id=unrouted.pk, target=target, by="second")
    with pytest.raises(InvalidState, match="assigned"):
        unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(other.pk)), by="second")
    with pytest.raises(InvalidState, match="assigned"):
        unrouted_refund(unrouted_id=unrouted.pk, by="second")

    assert again.status == Status.ASSIGNED
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.INVOICE_CREDIT).count() == 1
    assert webhook_statuses(WebhookEvent.Family.INVOICE, str(other.pk)) == ["created", "pending"]
    assert UnroutedEvent.objects.filter(unrouted=unrouted, action="assign").count() == 1


def test_assigning_to_a_static_address_credits_it_with_its_deposit_webhooks(merchant) -> None:  # type: ignore[no-untyped-def]
    static = StaticDepositAddressFactory(company=merchant.company, network="ton")
    unrouted = UnroutedDepositFactory(tag="", amount="3")

    unrouted_assign(unrouted_id=unrouted.pk, target=Target("static", str(static.pk)), by="ops")

    assert available(merchant.company, "ton") == Decimal(3)
    deposit = Deposit.objects.get(pk=unrouted.deposit_id)
    assert deposit.deposit_address_id == static.deposit_address_id
    assert webhook_statuses(WebhookEvent.Family.DEPOSIT, str(deposit.pk)) == ["processing", "done"]


@pytest.mark.parametrize(
    ("target", "error"),
    [
        (Target("invoice", "not-a-uuid"), NotFound),
        (Target("invoice", "00000000-0000-0000-0000-000000000000"), NotFound),
        (Target("static", "nope"), NotFound),
        (Target("nothing", "1"), ValidationFailed),
    ],
)
def test_a_bad_target_is_refused_and_changes_nothing(target, error) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory()

    with pytest.raises(error):
        unrouted_assign(unrouted_id=unrouted.pk, target=target, by="ops")

    unrouted.refresh_from_db()
    assert unrouted.status == Status.OPEN
    assert not LedgerEntry.objects.exists()


def test_an_invoice_of_another_asset_or_not_filled_is_refused(merchant) -> None:  # type: ignore[no-untyped-def]
    btc = InvoiceFactory(company=merchant.company, code="btc")
    created = InvoiceFactory(company=merchant.company)
    unrouted = UnroutedDepositFactory()

    with pytest.raises(ValidationFailed, match="takes btc, not ton"):
        unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(btc.pk)), by="ops")
    with pytest.raises(ValidationFailed, match="no address"):
        unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(created.pk)), by="ops")


def test_the_wrong_asset_goes_only_to_the_merchant_whose_address_it_reached(merchant, other_merchant) -> None:  # type: ignore[no-untyped-def]
    usdc = InvoiceFactory(company=merchant.company, code="usdc")
    elsewhere = InvoiceFactory(company=other_merchant.company, code="eth")
    unrouted = UnroutedDepositFactory(code="eth", address=usdc.deposit_address.address, tag="", amount="0.1")

    with pytest.raises(ValidationFailed, match="another merchant"):
        unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(elsewhere.pk)), by="ops")

    assert available(other_merchant.company, "eth") == 0


def test_a_deposit_not_final_yet_cannot_be_acted_on() -> None:
    unrouted = UnroutedDepositFactory(confirm=False)
    invoice = InvoiceFactory(code="ton")

    with pytest.raises(InvalidState, match="not confirmed"):
        unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(invoice.pk)), by="ops")
    with pytest.raises(InvalidState, match="not confirmed"):
        unrouted_refund(unrouted_id=unrouted.pk, by="ops")

    unrouted.refresh_from_db()
    assert unrouted.status == Status.OPEN
    assert not Withdrawal.objects.exists()
    assert not LedgerEntry.objects.exists()


# --- refund ---------------------------------------------------------------------------------------------


def test_a_refund_pays_the_sender_once_as_a_house_payout(merchant) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(amount="2")
    DepositClaimFactory(company=merchant.company, txid=unrouted.deposit.txid)

    refunding = unrouted_refund(unrouted_id=unrouted.pk, by="ops")
    unrouted_refund(unrouted_id=unrouted.pk, by="ops")  # a double click
    send_payouts("ton")
    send_payouts("ton")
    mine("ton", TON.confirmations)

    unrouted.refresh_from_db()
    withdrawal = Withdrawal.objects.get()
    paid = SandboxTransaction.objects.filter(kind=SandboxTransaction.Kind.WITHDRAWAL)
    assert refunding.status == Status.REFUNDING
    assert unrouted.status == Status.REFUNDED
    assert (withdrawal.company_id, withdrawal.status) == (None, Withdrawal.Status.DONE)
    assert [(tx.to_address, tx.amount) for tx in paid] == [(ADDRESSES["ton"], Decimal(2) - TON.network_fee)]
    assert not LedgerEntry.objects.exists()  # no merchant's balance ever held it
    assert not WebhookEvent.objects.exists()  # and no merchant is told
    assert DepositClaim.objects.get().status == ClaimStatus.REFUNDED
    [row] = house_fees(["ton"])
    assert (row.withdrawals_done, row.charged) == (1, TON.network_fee)  # the fee it paid, in the house's book


def test_a_rejected_refund_opens_it_again_and_the_next_refund_pays_once() -> None:
    unrouted = UnroutedDepositFactory(amount="2")
    first = unrouted_refund(unrouted_id=unrouted.pk, by="ops").refund_uid
    withdrawal_sandbox_reject(company=None, uid=first)

    unrouted.refresh_from_db()
    assert unrouted.status == Status.OPEN and first in unrouted.note
    assert _open_alert() is not None

    second = unrouted_refund(unrouted_id=unrouted.pk, to=ADDRESSES["ton"], by="ops").refund_uid
    send_payouts("ton")
    mine("ton", TON.confirmations)

    unrouted.refresh_from_db()
    assert second != first
    assert unrouted.status == Status.REFUNDED
    statuses = dict(Withdrawal.objects.values_list("uid", "status"))
    assert statuses == {first: Withdrawal.Status.REJECTED, second: Withdrawal.Status.DONE}


def test_a_refund_without_a_usable_sender_asks_for_an_address() -> None:
    unrouted = UnroutedDepositFactory(sender="sandbox-faucet")

    with pytest.raises(ValidationFailed, match="give the address"):
        unrouted_refund(unrouted_id=unrouted.pk, by="ops")
    with pytest.raises(ValidationFailed) as bad:
        unrouted_refund(unrouted_id=unrouted.pk, to="not an address", by="ops")

    assert bad.value.errors[0].field == "to"
    assert not Withdrawal.objects.exists()


def test_a_deposit_below_the_network_fee_cannot_be_refunded() -> None:
    unrouted = UnroutedDepositFactory(amount="0.04")

    with pytest.raises(ValidationFailed, match="does not cover the network fee"):
        unrouted_refund(unrouted_id=unrouted.pk, by="ops")

    unrouted.refresh_from_db()
    assert (unrouted.status, unrouted.refunds) == (Status.OPEN, 0)


def test_an_unknown_id_is_not_found() -> None:
    with pytest.raises(NotFound):
        unrouted_refund(unrouted_id=12345, by="ops")
    with pytest.raises(NotFound):
        unrouted_refund(unrouted_id="abc", by="ops")


def test_a_payment_to_its_invoice_s_own_comment_is_not_unrouted(invoice) -> None:  # type: ignore[no-untyped-def]
    pay_address("ton", invoice.deposit_address.address, invoice.amount_due, tag=invoice.deposit_address.tag)

    assert not UnroutedDeposit.objects.exists()


def test_a_deposit_a_reorganisation_took_back_cannot_be_acted_on(invoice) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(tag="", amount=invoice.amount_due)
    deposit_reverse(deposit_id=unrouted.deposit_id)

    with pytest.raises(InvalidState, match="reorganisation"):
        unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(invoice.pk)), by="ops")

    assert open_final() == {}  # not counted as waiting: the chain no longer holds it
    assert not LedgerEntry.objects.exists()


def test_assigned_to_an_invoice_closed_meanwhile_it_is_credited_in_full_as_a_late_payment(
    invoice, merchant
) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(tag="", amount=invoice.amount_due)
    invoice_close(invoice_id=invoice.pk, now=True)

    unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(invoice.pk)), by="ops")

    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.CLOSED
    assert Deposit.objects.get(pk=unrouted.deposit_id).is_late
    assert available(merchant.company, "ton") == invoice.amount_due  # in full, as any late payment
    assert webhook_statuses(WebhookEvent.Family.INVOICE, str(invoice.pk)) == ["created", "pending", "closed"]


def test_deposits_recorded_with_no_owner_before_are_backfilled(invoice) -> None:  # type: ignore[no-untyped-def]
    migration = importlib.import_module("chains.migrations.0008_unrouted_backfill")
    unrouted = UnroutedDepositFactory(tag="")
    failed = UnroutedDepositFactory(outcome="fail")
    UnroutedEvent.objects.all().delete()
    UnroutedDeposit.objects.all().delete()  # as before the migration that made them

    migration.backfill(django_apps, None)

    rows = dict(UnroutedDeposit.objects.values_list("deposit_id", "status"))
    assert rows == {unrouted.deposit_id: Status.OPEN, failed.deposit_id: Status.VOID}
    assert UnroutedDeposit.objects.get(deposit_id=unrouted.deposit_id).reason == UnroutedDeposit.Reason.NO_TAG


def test_the_house_keeps_one_only_with_a_reason_once_final_and_never_a_merchant_s() -> None:
    funding = UnroutedDepositFactory(tag="", amount="100", confirm=False)
    with pytest.raises(InvalidState):
        unrouted_keep(unrouted_id=funding.pk, by="ops", why="house funding")  # not final yet
    mine(funding.code, get_asset(funding.code).confirmations)
    with pytest.raises(ValidationFailed):
        unrouted_keep(unrouted_id=funding.pk, by="ops", why="  ")

    kept = unrouted_keep(unrouted_id=funding.pk, by="ops", why="house funding")
    again = unrouted_keep(unrouted_id=funding.pk, by="ops", why="house funding")  # a double click

    assert kept.status == again.status == UnroutedDeposit.Status.KEPT
    assert list(kept.events.values_list("action", flat=True)) == ["record", "keep"]
    assert Alert.objects.get(kind=ALERT, key="ton").status == "resolved"  # none open: nothing to do
    assert not LedgerEntry.objects.exists()
    with pytest.raises(InvalidState):
        unrouted_refund(unrouted_id=funding.pk, by="ops")


def test_a_wrong_asset_payment_at_a_merchant_s_address_is_never_kept_by_the_house(merchant) -> None:  # type: ignore[no-untyped-def]
    usdc = InvoiceFactory(company=merchant.company, code="usdc")
    unrouted = UnroutedDepositFactory(code="eth", address=usdc.deposit_address.address, tag="", amount="0.1")

    with pytest.raises(InvalidState, match="never the house's"):
        unrouted_keep(unrouted_id=unrouted.pk, by="ops", why="mine now")
    unrouted.refresh_from_db()
    assert unrouted.status == UnroutedDeposit.Status.OPEN
