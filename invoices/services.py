"""The invoice state machine: one transition table, one function per transition.

`grep -n "^def invoice_" invoices/services.py` lists every transition, `TRANSITIONS` says from which
statuses each may run, and `_transition` (the only code that changes an invoice's status) refuses any
other. Each transition locks the invoice (or is handed it locked by a caller holding the lock), returns
early when it already happened, saves only the fields it changed and writes its webhook event in the same
transaction. Ingestion calls `payment_seen` and `payment_settled`, which decide which transition a
payment causes, after applying the expiry rule (invoices.rules) exactly as the sweep does.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from chains.addresses import InvalidAddress, validate_address
from chains.deposit_addresses import deposit_address_allocate
from core import metrics
from core.assets import get_asset, price_decimals
from core.bulkinsert import insert_together
from core.errors import FieldError, InvalidState, NotFound, UnsupportedAsset, ValidationFailed
from core.money import MONEY_CONTEXT, InvalidAmount, check_range, exact_sum, quantize
from core.rates import rate as current_rate
from core.request_id import log_objects
from invoices.events import invoice_body
from invoices.expiry import close_unpaid, overdue_invoice_ids
from invoices.models import Invoice, InvoiceItem
from invoices.rules import (
    amounts_for,
    fee_percent,
    is_overdue,
    is_paid_in_full,
    pays_on_sandbox,
    require_allowed,
    sandbox_can_drive,
)
from notifications.events import notify_invoice_changed
from payments.ledger import ledger_credit
from payments.models import Company, Deposit, DepositAddress, LedgerEntry
from webhooks.models import WebhookEvent
from webhooks.services import webhook_enqueue, webhook_event_rows, webhook_publish_many

Status = Invoice.Status


@dataclass(frozen=True)
class Transition:
    sources: frozenset[str]
    target: str
    verb: str  # in "Cannot <verb> an invoice that is <status>."


# The invoice state machine. A new invoice is created (invoice_create); every later status change is one
# of these, made by the function `invoice_<name>`.
TRANSITIONS: dict[str, Transition] = {
    "fill": Transition(frozenset({Status.CREATED}), Status.PENDING, "fill"),
    "mark_processing": Transition(frozenset({Status.PENDING}), Status.PROCESSING, "mark as processing"),
    "mark_paid": Transition(
        frozenset({Status.PENDING, Status.PROCESSING, Status.WRONG}), Status.DONE, "mark as paid"
    ),
    "mark_wrong": Transition(frozenset({Status.PENDING, Status.PROCESSING}), Status.WRONG, "mark as wrong"),
    "accept": Transition(frozenset({Status.WRONG}), Status.DONE, "accept"),
    "refund": Transition(frozenset({Status.WRONG}), Status.REFUNDED, "refund"),
    "close": Transition(frozenset({Status.PENDING, Status.PROCESSING}), Status.CLOSED, "close"),
}


@dataclass(frozen=True)
class ItemInput:
    name: str
    price: Decimal


# --- the guard --------------------------------------------------------------------------------------------


def _guard(invoice: Invoice, name: str) -> Transition:
    transition = TRANSITIONS[name]
    if invoice.status not in transition.sources:
        raise InvalidState(f"Cannot {transition.verb} an invoice that is {invoice.status}.")
    return transition


def _transition(invoice: Invoice, name: str, *fields: str) -> None:
    """The one status change: guarded by the table, saved with `fields`, its webhook in the same commit."""
    invoice.status = _guard(invoice, name).target
    invoice.save(update_fields=["status", *fields, "updated_at"])
    webhook_publish_many([_event(invoice)])
    notify_invoice_changed(invoice)  # members' e-mail and the client's receipt, same commit
    metrics.invoice_status(invoice.status)


def _event(invoice: Invoice) -> tuple[Company, str, str, dict[str, Any]]:
    body = invoice_body(invoice_id=str(invoice.pk), status=invoice.status, sandbox=pays_on_sandbox(invoice))
    return invoice.company, WebhookEvent.Family.INVOICE, str(invoice.pk), body


def _locked(invoice_id: UUID | str, company: Company | None = None) -> Invoice:
    # of=self: lock the invoice only, not its company (that would serialize a merchant's invoices).
    invoice = (
        Invoice.objects.select_for_update(of=("self",))
        .select_related("company")
        .filter(pk=invoice_id)
        .first()
    )
    if invoice is None or (company is not None and invoice.company_id != company.pk):
        raise NotFound("No such invoice.")
    return invoice


def _credit(invoice: Invoice, amount: Decimal, reference: str) -> None:
    if amount > 0:
        ledger_credit(
            company_id=invoice.company_id,
            code=invoice.payment_code,
            amount=amount,
            kind=LedgerEntry.Kind.INVOICE_CREDIT,
            reference=reference,
        )
        invoice.credited_amount += amount


# --- transitions ------------------------------------------------------------------------------------------


def invoice_create(
    *,
    company: Company,
    invoice_currency: str,
    items: list[ItemInput],
    is_merchant_pays_fee: bool = False,
    payment_currency: str | None = None,
    redirect_url: str | None = None,
) -> Invoice:
    """-> created. The invoice, its items and its webhook event are written in one statement
    (`insert_together`), which commits whole by itself or in the caller's transaction."""
    decimals = price_decimals(invoice_currency)
    currency = invoice_currency.strip().lower()
    # Prices are rounded to the currency's decimals, half up, before anything adds them.
    rounded = [quantize(item.price, decimals=decimals, rounding=ROUND_HALF_UP) for item in items]
    with localcontext(MONEY_CONTEXT):
        total = sum(rounded, Decimal(0))
    if total <= 0:
        raise ValidationFailed(
            [FieldError("items", "total_not_positive", "the total of the items must be greater than 0")]
        )
    try:
        check_range(total)  # each price fits the columns; their sum may not
    except InvalidAmount as exc:
        raise ValidationFailed(
            [FieldError("items", "total_too_large", f"the total of the items: {exc}")]
        ) from exc
    fixed = require_allowed(company, payment_currency, "paymentCurrency") if payment_currency else ""
    invoice = Invoice(
        company=company,
        invoice_currency=currency,
        total=total,
        is_merchant_pays_fee=is_merchant_pays_fee,
        fixed_payment_code=fixed,
        redirect_url=redirect_url or "",
    )
    created = [
        InvoiceItem(invoice=invoice, position=position, name=item.name, price=price)
        for position, (item, price) in enumerate(zip(items, rounded, strict=True))
    ]
    events = webhook_event_rows([_event(invoice)])
    insert_together([invoice], created, events)
    metrics.invoice_created()
    log_objects(invoice_id=invoice.pk)
    webhook_enqueue(events)
    # `invoice.items.all()` answers with what was just written, in position order, as a prefetch would:
    # the API's answer to the create needs no second read of it.
    invoice._prefetched_objects_cache = {"items": created}  # type: ignore[attr-defined]
    return invoice


@transaction.atomic
def invoice_fill(
    *, invoice_id: UUID | str, client_email: str, payment_currency: str | None, company: Company | None = None
) -> Invoice:
    """created -> pending: the client's e-mail and asset; address issued, rate locked, expiry set."""
    invoice = _locked(invoice_id, company)
    email = client_email.strip().lower()
    # The merchant's fixed asset wins over the client's, but must still be one the merchant accepts now.
    chosen = invoice.fixed_payment_code or payment_currency
    code = require_allowed(invoice.company, chosen, "paymentCurrency") if chosen else ""
    if not code:
        raise ValidationFailed([FieldError("paymentCurrency", "required", "choose the asset to pay with")])
    if invoice.status == Status.PENDING and invoice.client_email == email and invoice.payment_code == code:
        return invoice  # a double-clicked button: the same answer again
    _guard(invoice, "fill")

    asset = get_asset(code)
    rate = current_rate(invoice.invoice_currency, code)
    fee, amount_due = amounts_for(
        total=invoice.total,
        rate=rate,
        code=code,
        percent=fee_percent(invoice.company),
        merchant_pays=invoice.is_merchant_pays_fee,
    )
    now = timezone.now()
    invoice.client_email = email
    invoice.payment_code = code
    invoice.deposit_address = deposit_address_allocate(
        company=invoice.company, code=code, owner=DepositAddress.Owner.INVOICE
    )
    invoice.rate = rate
    invoice.fee = fee
    invoice.amount_due = amount_due
    invoice.filled_at = now
    invoice.expired_at = now + asset.invoice_lifetime
    fields = ("client_email", "payment_code", "deposit_address", "rate", "fee", "amount_due", "filled_at")
    _transition(invoice, "fill", *fields, "expired_at")
    return invoice


def invoice_mark_processing(invoice: Invoice) -> None:
    """pending -> processing: a payment was seen. The caller holds the invoice's lock."""
    _transition(invoice, "mark_processing")


def invoice_mark_paid(invoice: Invoice) -> None:
    """-> done: what arrived covers the invoice. The caller holds the lock."""
    _credit_net(invoice)
    _transition(invoice, "mark_paid", "paid_amount", "credited_amount")


def _credit_net(invoice: Invoice) -> None:
    """A done invoice: the merchant is credited what arrived, less the service fee."""
    with localcontext(MONEY_CONTEXT):
        net = invoice.paid_amount - min(invoice.fee or Decimal(0), invoice.paid_amount)
    _credit(invoice, net, f"invoice:{invoice.pk}")


def invoice_mark_wrong(invoice: Invoice) -> None:
    """-> wrong: everything sent has settled and it falls short. The caller holds the lock."""
    _transition(invoice, "mark_wrong", "paid_amount")


def _decided(invoice: Invoice, name: str) -> bool:
    """The merchant's decision on a wrong invoice may run (False), or already ran (True: a repeated click)."""
    transition = TRANSITIONS[name]
    if invoice.status == transition.target:
        return True
    _guard(invoice, name)
    if _deposits(invoice).filter(status=Deposit.Status.SEEN).exists():
        raise InvalidState(
            f"A payment to this invoice is still unconfirmed; {transition.verb} it once it settles."
        )
    return False


@transaction.atomic
def invoice_accept(*, company: Company, invoice_id: UUID | str) -> Invoice:
    """wrong -> done: the merchant keeps what arrived (credited less the fee)."""
    invoice = _locked(invoice_id, company)
    if not _decided(invoice, "accept"):
        _credit_net(invoice)
        _transition(invoice, "accept", "credited_amount")
    return invoice


refund_handlers: list[Any] = []  # withdrawals registers the one that sends the money back


def refund_address(invoice: Invoice, address: str) -> str:
    """The client's refund address, checked for the invoice's network (ValidationFailed names `address`)."""
    if not invoice.payment_code:
        return address  # not filled: the status guard refuses the refund
    try:
        return validate_address(invoice.payment_code, address)
    except InvalidAddress as exc:
        raise ValidationFailed([FieldError("address", "invalid_address", str(exc))]) from exc


@transaction.atomic
def invoice_refund(*, company: Company, invoice_id: UUID | str, address: str, tag: str = "") -> Invoice:
    """wrong -> refunded: what arrived goes back to the client's address through a refund withdrawal."""
    invoice = _locked(invoice_id, company)
    address = refund_address(invoice, address)
    if _decided(invoice, "refund"):
        return invoice
    if not refund_handlers:
        raise InvalidState("Refunds need the withdrawals module, which is not installed.")
    invoice.refund_address, invoice.refund_tag = address, tag
    # Received funds enter the merchant's balance, and the refund withdrawal holds them at once.
    _credit(invoice, invoice.paid_amount, f"invoice:{invoice.pk}")
    for handler in refund_handlers:
        handler(invoice)
    _transition(invoice, "refund", "refund_address", "refund_tag", "credited_amount")
    return invoice


@transaction.atomic
def invoice_close(*, invoice_id: UUID | str, now: bool = False, company: Company | None = None) -> Invoice:
    """pending/processing -> closed once overdue (the expiry rule); `now=True` closes at once, for
    invoices the sandbox may drive only (the simulator's "expire")."""
    invoice = _locked(invoice_id, company)
    if now and not sandbox_can_drive(invoice):
        raise ValidationFailed([FieldError("invoice", UnsupportedAsset.code, "not on the sandbox chain")])
    if invoice.status == Status.CLOSED:
        return invoice  # the sweep and a late task may both get here
    _guard(invoice, "close")
    if not now and not is_overdue(invoice, timezone.now()):
        raise InvalidState("This invoice has not expired yet.")
    _close(invoice)
    return invoice


def _close(invoice: Invoice) -> None:
    """Payments that confirmed before the close (while another was still open) are the merchant's: credited in
    full, like late ones, in the closing transaction. Nothing received is ever left out of the ledger."""
    _credit(invoice, invoice.paid_amount, f"invoice:{invoice.pk}")
    _transition(invoice, "close", "credited_amount")


# --- the expiry sweep ---------------------------------------------------------------------------------------


def close_overdue_invoices(*, batch: int | None = None) -> int:
    """The periodic sweep: close every overdue invoice, a batch per transaction, each with its webhook."""
    batch = batch or settings.INVOICE_EXPIRY_BATCH
    closed = 0
    if connection.vendor == "postgresql":
        closed += close_unpaid(batch=batch, close=TRANSITIONS["close"])
    # Invoices with a confirmed part (they are credited on closing), and every overdue invoice elsewhere.
    while ids := overdue_invoice_ids(limit=batch):
        done_now = _close_batch(ids)
        closed += done_now
        if len(ids) < batch or done_now == 0:
            break  # the rest is locked by someone closing them right now, or not due after all
    return closed


@transaction.atomic
def _close_batch(ids: list[UUID]) -> int:
    """`invoice_close` for many invoices: one UPDATE guarded by the table's source statuses."""
    now = timezone.now()
    close = TRANSITIONS["close"]
    invoices = list(
        Invoice.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("company")
        .filter(pk__in=ids, status__in=close.sources)
    )
    due = [invoice for invoice in invoices if is_overdue(invoice, now)]
    if not due:
        return 0
    updated = Invoice.objects.filter(pk__in=[i.pk for i in due], status__in=close.sources).update(
        status=close.target, updated_at=now
    )
    assert updated == len(due), "rows locked above changed status"  # the lock makes this impossible
    for invoice in due:
        invoice.status = close.target
        if invoice.paid_amount > 0:  # rare: a processing invoice with a confirmed part
            _credit(invoice, invoice.paid_amount, f"invoice:{invoice.pk}")
            invoice.save(update_fields=["credited_amount", "updated_at"])
    webhook_publish_many([_event(invoice) for invoice in due])
    metrics.invoice_status(close.target, len(due))
    return len(due)


# --- payments: which transition a deposit causes -----------------------------------------------------------


def _deposits(invoice: Invoice) -> Any:
    return Deposit.objects.filter(deposit_address_id=invoice.deposit_address_id, is_late=False)


def _close_if_overdue(invoice: Invoice) -> None:
    """The sweep's rule at ingestion: a payment to an overdue invoice finds it closed, as the sweep would
    have left it, whether or not the sweep has run yet. The payment is then late (credited, never counted)."""
    if is_overdue(invoice, timezone.now()):
        _close(invoice)


def _mark_late(deposit: Deposit) -> None:
    if not deposit.is_late:
        deposit.is_late = True
        deposit.save(update_fields=["is_late", "updated_at"])


@transaction.atomic
def payment_seen(*, invoice_id: UUID | str, deposit: Deposit) -> Invoice:
    """pending -> processing when a payment is first seen; a payment to a final invoice is flagged late."""
    invoice = _locked(invoice_id)
    _close_if_overdue(invoice)
    if invoice.status in Invoice.FINAL:
        _mark_late(deposit)
    elif invoice.status == Status.PENDING:
        invoice_mark_processing(invoice)
    return invoice  # processing or wrong: another payment on its way, settled when it confirms


@transaction.atomic
def payment_settled(*, invoice_id: UUID | str, deposit: Deposit) -> Invoice:
    """A payment confirmed or failed: -> done or wrong once nothing is left unconfirmed."""
    invoice = _locked(invoice_id)
    _close_if_overdue(invoice)
    if invoice.status in Invoice.FINAL or deposit.is_late:
        if deposit.status == Deposit.Status.CONFIRMED:
            _mark_late(deposit)
            _credit(invoice, deposit.amount, f"deposit:{deposit.pk}")  # late payments are credited in full
            invoice.save(update_fields=["credited_amount", "updated_at"])
        return invoice
    invoice.paid_amount = exact_sum(
        _deposits(invoice).filter(status=Deposit.Status.CONFIRMED).values_list("amount", flat=True)
    )
    complete = is_paid_in_full(invoice)
    if invoice.status == Status.WRONG:
        assert invoice.expired_at is not None
        if complete and timezone.now() <= invoice.expired_at:  # topped up in time
            invoice_mark_paid(invoice)
        else:
            invoice.save(update_fields=["paid_amount", "updated_at"])
    elif complete:
        invoice_mark_paid(invoice)
    elif invoice.paid_amount > 0 and not _deposits(invoice).filter(status=Deposit.Status.SEEN).exists():
        invoice_mark_wrong(invoice)
    else:
        invoice.save(update_fields=["paid_amount", "updated_at"])
    return invoice


class InvoiceDepositHandler:
    """Deposits to invoice addresses (registered with chains.deposits in InvoicesConfig.ready)."""

    def on_seen(self, deposit: Deposit) -> None:
        payment_seen(invoice_id=self._invoice_id(deposit), deposit=deposit)

    def on_confirmed(self, deposit: Deposit) -> None:
        payment_settled(invoice_id=self._invoice_id(deposit), deposit=deposit)

    def on_failed(self, deposit: Deposit) -> None:
        payment_settled(invoice_id=self._invoice_id(deposit), deposit=deposit)

    def awaits_payment(self, address: DepositAddress) -> bool:
        """The invoice of `address` is not final: a payment to it may still come (chains.deposits)."""
        return Invoice.objects.filter(deposit_address=address).exclude(status__in=Invoice.FINAL).exists()

    @staticmethod
    def _invoice_id(deposit: Deposit) -> UUID:
        return Invoice.objects.values_list("pk", flat=True).get(deposit_address_id=deposit.deposit_address_id)
