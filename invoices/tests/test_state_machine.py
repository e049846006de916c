"""The invoice state machine: every transition is one `invoice_<name>` function guarded by TRANSITIONS,
every transition the table does not allow is refused and changes nothing, and the expiry rule is the same
for the sweep and for a payment that arrives before the sweep ran."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import timezone

from core import jsonutil, wakeup
from core.assets import all_assets, get_asset
from core.errors import InvalidState
from invoices import services
from invoices.models import Invoice
from invoices.services import TRANSITIONS, ItemInput
from payments.models import Deposit, LedgerEntry
from tests.chain import mine, pay
from tests.factories import InvoiceFactory
from webhooks.models import WebhookEvent

Status = Invoice.Status
REFUND_TO = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
EMAIL = "client@example.com"


def _filled(merchant) -> Invoice:  # type: ignore[no-untyped-def]
    return InvoiceFactory(
        company=merchant.company,
        items=[ItemInput(name="Tea", price=Decimal("10"))],
        code="btc",
        client_email=EMAIL,
    )


def _locked(invoice: Invoice) -> Invoice:
    return Invoice.objects.select_for_update().select_related("company").get(pk=invoice.pk)


def _call(name: str, invoice: Invoice) -> None:
    """Run the transition `name` on the invoice through its public function."""
    company = invoice.company
    calls: dict[str, Callable[[], object]] = {
        "fill": lambda: services.invoice_fill(
            invoice_id=invoice.pk, client_email=EMAIL, payment_currency="btc"
        ),
        "mark_processing": lambda: services.invoice_mark_processing(_locked(invoice)),
        "mark_paid": lambda: services.invoice_mark_paid(_locked(invoice)),
        "mark_wrong": lambda: services.invoice_mark_wrong(_locked(invoice)),
        "accept": lambda: services.invoice_accept(company=company, invoice_id=invoice.pk),
        "refund": lambda: services.invoice_refund(company=company, invoice_id=invoice.pk, address=REFUND_TO),
        "close": lambda: services.invoice_close(invoice_id=invoice.pk, now=True),
    }
    with transaction.atomic():
        calls[name]()


def test_every_transition_is_one_named_function() -> None:
    source = Path(inspect.getfile(services)).read_text()
    listed = set(re.findall(r"^def (invoice_\w+)", source, flags=re.MULTILINE))
    assert listed == {"invoice_create"} | {f"invoice_{name}" for name in TRANSITIONS}


def test_only_the_guard_writes_a_status() -> None:
    # Every status change goes through _transition (or the guarded batch close), never a bare assignment.
    source = Path(inspect.getfile(services)).read_text()
    assignments = re.findall(r"^\s+(\w+)\.status = (.+)$", source, flags=re.MULTILINE)
    assert sorted(assignments) == [
        ("invoice", "_guard(invoice, name).target"),
        ("invoice", "close.target"),
    ]


DISALLOWED = [
    (name, status)
    for name, transition in TRANSITIONS.items()
    for status in Status.values
    if status not in transition.sources
]


@pytest.mark.parametrize(("name", "status"), DISALLOWED, ids=[f"{n}-from-{s}" for n, s in DISALLOWED])
def test_a_transition_the_table_does_not_allow_is_refused(merchant, name: str, status: str) -> None:  # type: ignore[no-untyped-def]
    invoice = _filled(merchant)
    Invoice.objects.filter(pk=invoice.pk).update(status=status)
    before = Invoice.objects.values().get(pk=invoice.pk)
    events = WebhookEvent.objects.count()
    entries = LedgerEntry.objects.count()

    if status == TRANSITIONS[name].target and name in {"fill", "accept", "refund", "close"}:
        _call(name, invoice)  # a repeat of what already happened: the same answer, nothing written
    else:
        with pytest.raises(InvalidState):
            _call(name, invoice)

    assert Invoice.objects.values().get(pk=invoice.pk) == before
    assert WebhookEvent.objects.count() == events
    assert LedgerEntry.objects.count() == entries


@pytest.mark.parametrize("name", ["mark_processing", "mark_paid", "mark_wrong", "close"])
def test_an_allowed_transition_moves_to_its_target_with_its_webhook(merchant, name: str) -> None:  # type: ignore[no-untyped-def]
    invoice = _filled(merchant)
    source = sorted(TRANSITIONS[name].sources)[0]
    Invoice.objects.filter(pk=invoice.pk).update(status=source)

    _call(name, invoice)

    invoice.refresh_from_db()
    assert invoice.status == TRANSITIONS[name].target
    latest = WebhookEvent.objects.filter(object_id=str(invoice.pk)).latest("created_at")
    assert latest.event_status == invoice.status


# --- the expiry rule at ingestion ---------------------------------------------------------------------------


def _overdue(invoice: Invoice, *, by: timedelta) -> None:
    Invoice.objects.filter(pk=invoice.pk).update(expired_at=timezone.now() - by)


def _credited(invoice: Invoice) -> Decimal:
    entries = LedgerEntry.objects.filter(
        account__company=invoice.company, kind=LedgerEntry.Kind.INVOICE_CREDIT
    )
    return sum((entry.available_delta for entry in entries), Decimal(0))


def test_a_payment_first_seen_after_expiry_closes_a_pending_invoice_and_is_late(merchant) -> None:  # type: ignore[no-untyped-def]
    invoice = _filled(merchant)
    _overdue(invoice, by=timedelta(seconds=1))  # past expiredAt, and the sweep has not run

    pay(invoice, invoice.amount_due)

    invoice.refresh_from_db()
    assert invoice.status == Status.CLOSED  # as the sweep would have left it, never processing
    deposit = Deposit.objects.get(deposit_address=invoice.deposit_address)
    assert deposit.is_late
    statuses = list(
        WebhookEvent.objects.filter(object_id=str(invoice.pk))
        .order_by("created_at")
        .values_list("event_status", flat=True)
    )
    assert statuses == ["created", "pending", "closed"]

    mine(invoice, 6)

    invoice.refresh_from_db()
    assert invoice.status == Status.CLOSED  # it never completes
    assert invoice.paid_amount == 0
    assert _credited(invoice) == invoice.amount_due == invoice.credited_amount  # credited in full, once
    assert services.close_overdue_invoices() == 0  # the sweep finds nothing left to do


def test_the_same_payment_before_expiry_completes_the_invoice(merchant) -> None:  # type: ignore[no-untyped-def]
    invoice = _filled(merchant)
    pay(invoice, invoice.amount_due)
    mine(invoice, 6)
    invoice.refresh_from_db()
    assert invoice.status == Status.DONE


def test_a_payment_confirming_past_the_grace_finds_the_invoice_closed_as_the_sweep_would(merchant) -> None:  # type: ignore[no-untyped-def]
    invoice = _filled(merchant)
    pay(invoice, invoice.amount_due)
    invoice.refresh_from_db()
    assert invoice.status == Status.PROCESSING
    grace = get_asset("btc").expiry_grace
    _overdue(invoice, by=grace + timedelta(seconds=1))

    mine(invoice, 6)

    invoice.refresh_from_db()
    assert invoice.status == Status.CLOSED
    assert Deposit.objects.get(deposit_address=invoice.deposit_address).is_late
    assert invoice.credited_amount == invoice.amount_due


@pytest.mark.parametrize("on_sandbox", [True, False])
@pytest.mark.parametrize("webhook_url", ["https://shop.example/hooks", ""])
def test_the_sweep_writes_each_closed_invoice_its_event(  # type: ignore[no-untyped-def]
    merchant, monkeypatch, django_capture_on_commit_callbacks, on_sandbox, webhook_url
) -> None:
    """Across batches (PostgreSQL closes unpaid invoices in one statement per batch, elsewhere per invoice),
    each closed invoice gets the body `invoice_body` builds, delivered (the dispatcher woken after commit)
    or skipped as the company's webhook URL says."""
    from invoices.events import invoice_body

    codes = [asset.code for asset in all_assets()]
    monkeypatch.setattr("invoices.expiry.sandbox_codes", lambda: codes if on_sandbox else [])
    monkeypatch.setattr("invoices.rules.is_sandbox", lambda code: on_sandbox)
    merchant.company.webhook_url = webhook_url
    merchant.company.save(update_fields=["webhook_url"])
    invoices = [_filled(merchant) for _ in range(3)]
    for invoice in invoices:
        _overdue(invoice, by=timedelta(seconds=1))

    with django_capture_on_commit_callbacks() as callbacks:
        assert services.close_overdue_invoices(batch=2) == 3

    events = WebhookEvent.objects.filter(event_status=Status.CLOSED)
    assert sorted(event.object_id for event in events) == sorted(str(invoice.pk) for invoice in invoices)
    for event in events:
        assert event.company_id == merchant.company.pk
        assert event.family == WebhookEvent.Family.INVOICE
        assert event.body == jsonutil.dumps(
            invoice_body(invoice_id=event.object_id, status=Status.CLOSED, sandbox=on_sandbox)
        )
        assert event.status == (WebhookEvent.Status.PENDING if webhook_url else WebhookEvent.Status.SKIPPED)
        assert (event.next_attempt_at is not None) == bool(webhook_url)
    # core.wakeup: (task, its args), once per batch; the other callbacks count metrics.
    woken = [callback.args for callback in callbacks if getattr(callback, "func", None) is wakeup._wake]
    assert woken == ([((("webhooks.tasks.webhook_dispatch",),),)] * 2 if webhook_url else [])
    assert set(Invoice.objects.values_list("status", flat=True)) == {Status.CLOSED}


def test_the_batch_close_refuses_to_overwrite_a_newer_status(merchant, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    invoice = _filled(merchant)
    _overdue(invoice, by=timedelta(seconds=1))
    # With a confirmed part it is closed by the batch that reads it first on every database (on PostgreSQL
    # an unpaid one is read, locked and closed in one statement, with no moment between read and write).
    Invoice.objects.filter(pk=invoice.pk).update(paid_amount=Decimal("0.0001"))
    # Between the sweep's read and its write someone completed the invoice: the guarded UPDATE skips it.
    real = services.overdue_invoice_ids

    def read_then_complete(*, limit: int) -> list:  # type: ignore[type-arg]
        ids = real(limit=limit)
        Invoice.objects.filter(pk=invoice.pk).update(status=Status.DONE)
        return ids

    monkeypatch.setattr(services, "overdue_invoice_ids", read_then_complete)
    assert services.close_overdue_invoices() == 0
    invoice.refresh_from_db()
    assert invoice.status == Status.DONE
