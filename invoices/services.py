"""The invoice state machine (API.md 3.1, DECISIONS.md §4): one function per transition.

`grep "^def invoice_" invoices/services.py` lists it. Each locks the invoice, returns early when the
transition already happened, refuses any other source state, saves only changed fields and writes its
webhook event in the same transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from decimal import ROUND_HALF_UP, ROUND_UP, Decimal, localcontext
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from invoices.models import Invoice, InvoiceItem, UnderpaymentLimit
from payments.assets import all_assets, get_asset, price_decimals
from payments.chains.base import is_offered, is_sandbox
from payments.deposit_addresses import deposit_address_allocate
from payments.errors import FieldError, InvalidState, NotFound, UnsupportedAsset, ValidationFailed
from payments.ledger import ledger_credit
from payments.models import Company, Deposit, DepositAddress, LedgerEntry
from payments.money import MONEY_CONTEXT, exact_sum, quantize
from payments.rates import rate as current_rate
from webhooks.models import WebhookEvent
from webhooks.payloads import invoice_body
from webhooks.services import webhook_publish, webhook_publish_many

Status = Invoice.Status


@dataclass(frozen=True)
class ItemInput:
    name: str
    price: Decimal


# --- helpers ----------------------------------------------------------------------------------------------


def _publish(invoice: Invoice) -> None:
    webhook_publish(
        company=invoice.company,
        family=WebhookEvent.Family.INVOICE,
        object_id=str(invoice.pk),
        body=invoice_body(invoice_id=str(invoice.pk), status=invoice.status, sandbox=_is_sandbox(invoice)),
    )


def _is_sandbox(invoice: Invoice) -> bool:
    code = invoice.payment_code or invoice.fixed_payment_code
    return bool(code) and is_sandbox(code)


def _locked(invoice_id: UUID | str) -> Invoice:
    # of=self: lock the invoice only, not its company (that would serialize a merchant's invoices).
    invoice = (
        Invoice.objects.select_for_update(of=("self",))
        .select_related("company")
        .filter(pk=invoice_id)
        .first()
    )
    if invoice is None:
        raise NotFound("No such invoice.")
    return invoice


def _require_status(invoice: Invoice, *allowed: str, action: str) -> None:
    if invoice.status not in allowed:
        raise InvalidState(f"Cannot {action} an invoice that is {invoice.status}.")


def _set_status(invoice: Invoice, status: str, *fields: str) -> None:
    invoice.status = status
    invoice.save(update_fields=["status", *fields, "updated_at"])
    _publish(invoice)


def allowed_codes(company: Company) -> list[str]:
    allowed = set(company.allowed_assets)
    return [asset.code for asset in all_assets() if asset.base in allowed and is_offered(asset.code)]


def _require_allowed(company: Company, code: str, field: str) -> str:
    try:
        code = get_asset(code).code
    except UnsupportedAsset as exc:
        raise ValidationFailed([FieldError(field, UnsupportedAsset.code, exc.detail)]) from exc
    if code not in allowed_codes(company):
        raise ValidationFailed(
            [FieldError(field, UnsupportedAsset.code, f"{code} is not accepted by this merchant")]
        )
    return code


def fee_percent(company: Company) -> Decimal:
    return company.fee_percent if company.fee_percent is not None else Decimal(settings.INVOICE_FEE_PERCENT)


def underpayment_tolerance(invoice: Invoice) -> Decimal:
    """How far below amount_due still completes the invoice: the larger of the static and percent limits."""
    limit = UnderpaymentLimit.objects.filter(company_id=invoice.company_id, code=invoice.payment_code).first()
    if limit is None or invoice.amount_due is None:
        return Decimal(0)
    with localcontext(MONEY_CONTEXT):
        by_percentage = invoice.amount_due * limit.percentage / 100
    return max(limit.static, by_percentage)


# --- create and fill ----------------------------------------------------------------------------------------


@transaction.atomic
def invoice_create(
    *,
    company: Company,
    invoice_currency: str,
    items: list[ItemInput],
    is_merchant_pays_fee: bool = False,
    payment_currency: str | None = None,
    redirect_url: str | None = None,
) -> Invoice:
    decimals = price_decimals(invoice_currency)
    currency = invoice_currency.strip().lower()
    # API.md §8: prices are rounded to the currency's decimals, half up, before anything adds them.
    rounded = [quantize(item.price, decimals=decimals, rounding=ROUND_HALF_UP) for item in items]
    with localcontext(MONEY_CONTEXT):
        total = sum(rounded, Decimal(0))
    if total <= 0:
        raise ValidationFailed(
            [FieldError("items", "total_not_positive", "the total of the items must be greater than 0")]
        )
    fixed = _require_allowed(company, payment_currency, "paymentCurrency") if payment_currency else ""
    invoice = Invoice.objects.create(
        company=company,
        invoice_currency=currency,
        total=total,
        is_merchant_pays_fee=is_merchant_pays_fee,
        fixed_payment_code=fixed,
        redirect_url=redirect_url or "",
    )
    InvoiceItem.objects.bulk_create(
        [
            InvoiceItem(invoice=invoice, position=position, name=item.name, price=price)
            for position, (item, price) in enumerate(zip(items, rounded, strict=True))
        ]
    )
    _publish(invoice)
    return invoice


def amounts_for(
    *, total: Decimal, rate: Decimal, code: str, percent: Decimal, merchant_pays: bool
) -> tuple[Decimal, Decimal]:
    """(fee, amount_due) in the payment asset, both rounded UP to its display decimals.

    Up for the amount: the merchant is never short. Up for the fee: the service never under-collects.
    """
    display = get_asset(code).display_decimals
    with localcontext(MONEY_CONTEXT):
        converted = total * rate
        fee = quantize(converted * percent / 100, decimals=display, rounding=ROUND_UP)
        base = quantize(converted, decimals=display, rounding=ROUND_UP)
        return fee, (base if merchant_pays else base + fee)


@transaction.atomic
def invoice_proceed(
    *, invoice_id: UUID | str, client_email: str, payment_currency: str | None, company: Company | None = None
) -> Invoice:
    """created -> pending: the client's e-mail and asset; address issued, rate locked, expiry set."""
    invoice = _locked(invoice_id)
    if company is not None and invoice.company_id != company.pk:
        raise NotFound("No such invoice.")
    email = client_email.strip().lower()
    # The merchant's fixed asset wins over the client's, but must still be one the merchant accepts now.
    chosen = invoice.fixed_payment_code or payment_currency
    code = _require_allowed(invoice.company, chosen, "paymentCurrency") if chosen else ""
    if not code:
        raise ValidationFailed([FieldError("paymentCurrency", "required", "choose the asset to pay with")])
    if invoice.status == Status.PENDING and invoice.client_email == email and invoice.payment_code == code:
        return invoice  # a double-clicked button: the same answer again (DECISIONS.md §4)
    _require_status(invoice, Status.CREATED, action="fill")

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
    _set_status(
        invoice,
        Status.PENDING,
        "client_email",
        "payment_code",
        "deposit_address",
        "rate",
        "fee",
        "amount_due",
        "filled_at",
        "expired_at",
    )
    return invoice


# --- payments -----------------------------------------------------------------------------------------------


def _deposits(invoice: Invoice) -> Any:
    return Deposit.objects.filter(deposit_address_id=invoice.deposit_address_id, is_late=False)


def _confirmed_sum(invoice: Invoice) -> Decimal:
    confirmed = _deposits(invoice).filter(status=Deposit.Status.CONFIRMED).values_list("amount", flat=True)
    return exact_sum(confirmed)  # in Python: exact on SQLite too (payments.fields)


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


def _complete(invoice: Invoice) -> None:
    """-> done: the merchant is credited what arrived, less the service fee."""
    with localcontext(MONEY_CONTEXT):
        net = invoice.paid_amount - min(invoice.fee or Decimal(0), invoice.paid_amount)
    _credit(invoice, net, f"invoice:{invoice.pk}")
    _set_status(invoice, Status.DONE, "paid_amount", "credited_amount")


@transaction.atomic
def invoice_payment_seen(*, invoice_id: UUID | str, deposit: Deposit) -> Invoice:
    """pending -> processing when a payment is first seen; a payment to a final invoice is flagged late."""
    invoice = _locked(invoice_id)
    if invoice.status in Invoice.FINAL:
        _mark_late(deposit)
        return invoice
    if invoice.status == Status.PENDING:
        _set_status(invoice, Status.PROCESSING)
    return invoice  # processing or wrong: another payment on its way, settled when it confirms


@transaction.atomic
def invoice_payment_settled(*, invoice_id: UUID | str, deposit: Deposit) -> Invoice:
    """A payment confirmed or failed: processing/wrong -> done or wrong once nothing is left unconfirmed."""
    invoice = _locked(invoice_id)
    if invoice.status in Invoice.FINAL or deposit.is_late:
        if deposit.status == Deposit.Status.CONFIRMED:
            _mark_late(deposit)
            _credit(invoice, deposit.amount, f"deposit:{deposit.pk}")  # late payments are credited in full
            invoice.save(update_fields=["credited_amount", "updated_at"])
        return invoice
    invoice.paid_amount = _confirmed_sum(invoice)
    assert invoice.amount_due is not None
    complete = invoice.paid_amount >= invoice.amount_due - underpayment_tolerance(invoice)
    open_payments = _deposits(invoice).filter(status=Deposit.Status.SEEN).exists()
    if invoice.status == Status.WRONG:
        assert invoice.expired_at is not None
        if complete and timezone.now() <= invoice.expired_at:  # topped up in time
            _complete(invoice)
        else:
            invoice.save(update_fields=["paid_amount", "updated_at"])
        return invoice
    if complete:
        _complete(invoice)
    elif not open_payments and invoice.paid_amount > 0:
        _set_status(invoice, Status.WRONG, "paid_amount")
    else:
        invoice.save(update_fields=["paid_amount", "updated_at"])
    return invoice


def _mark_late(deposit: Deposit) -> None:
    if not deposit.is_late:
        deposit.is_late = True
        deposit.save(update_fields=["is_late", "updated_at"])


@transaction.atomic
def underpayment_limits_set(*, company: Company, limits: Mapping[str, Mapping[str, Decimal]]) -> None:
    """Payment code -> {"static", "percentage"}, validated by invoices.api.settings.LimitSerializer."""
    for code, values in limits.items():
        UnderpaymentLimit.objects.update_or_create(
            company=company,
            code=code,
            defaults={"static": values["static"], "percentage": values["percentage"]},
        )


# --- merchant decisions and expiry --------------------------------------------------------------------------


def _locked_for_decision(
    company: Company, invoice_id: UUID | str, *, target: str, action: str
) -> tuple[Invoice, bool]:
    """A wrong invoice of this company, locked for accept/refund; returns (invoice, already decided)."""
    invoice = _locked(invoice_id)
    if invoice.company_id != company.pk:
        raise NotFound("No such invoice.")
    if invoice.status == target:
        return invoice, True  # a repeated click: the decision stands
    _require_status(invoice, Status.WRONG, action=action)
    if _deposits(invoice).filter(status=Deposit.Status.SEEN).exists():
        raise InvalidState(f"A payment to this invoice is still unconfirmed; {action} it once it settles.")
    return invoice, False


@transaction.atomic
def invoice_accept(*, company: Company, invoice_id: UUID | str) -> Invoice:
    """wrong -> done: the merchant keeps what arrived (credited less the fee)."""
    invoice, decided = _locked_for_decision(company, invoice_id, target=Status.DONE, action="accept")
    if not decided:
        _complete(invoice)
    return invoice


refund_handlers: list[Any] = []  # withdrawals registers the one that sends the money back


@transaction.atomic
def invoice_refund(*, company: Company, invoice_id: UUID | str, address: str, tag: str = "") -> Invoice:
    """wrong -> refunded: what arrived goes back to the client's address through a refund withdrawal."""
    invoice, decided = _locked_for_decision(company, invoice_id, target=Status.REFUNDED, action="refund")
    if decided:
        return invoice
    if not refund_handlers:
        raise InvalidState("Refunds need the withdrawals module, which is not installed.")
    invoice.refund_address, invoice.refund_tag = address, tag
    # Received funds enter the merchant's balance, and the refund withdrawal holds them at once.
    _credit(invoice, invoice.paid_amount, f"invoice:{invoice.pk}")
    for handler in refund_handlers:
        handler(invoice)
    _set_status(invoice, Status.REFUNDED, "refund_address", "refund_tag", "credited_amount")
    return invoice


@transaction.atomic
def invoice_expire(*, invoice_id: UUID | str, force: bool = False) -> Invoice:
    """pending -> closed at expiredAt; processing -> closed when its payment is still unconfirmed a grace
    period after expiredAt. `force` (sandbox) closes now."""
    invoice = _locked(invoice_id)
    if invoice.status == Status.CLOSED:
        return invoice  # the sweep and a late task may both get here
    _require_status(invoice, Status.PENDING, Status.PROCESSING, action="expire")
    if not force:
        assert invoice.expired_at is not None
        due = invoice.expired_at
        if invoice.status == Status.PROCESSING:
            due += get_asset(invoice.payment_code).expiry_grace
        if timezone.now() < due:
            raise InvalidState("This invoice has not expired yet.")
    _credit_on_close(invoice)
    _set_status(invoice, Status.CLOSED, "credited_amount")
    return invoice


def _credit_on_close(invoice: Invoice) -> None:
    """Payments that confirmed before the close (while another was still open) are the merchant's: credited in
    full, like late ones, in the closing transaction. Nothing received is ever left out of the ledger."""
    _credit(invoice, invoice.paid_amount, f"invoice:{invoice.pk}")


def overdue_invoice_ids(*, limit: int) -> list[UUID]:
    """Pending past expiredAt, and processing past expiredAt plus the asset's grace, oldest first."""
    now = timezone.now()
    ids: list[UUID] = list(
        Invoice.objects.filter(status=Status.PENDING, expired_at__lte=now)
        .order_by("expired_at")
        .values_list("pk", flat=True)[:limit]
    )
    for asset in all_assets():
        if len(ids) >= limit:
            break
        ids += Invoice.objects.filter(
            status=Status.PROCESSING, payment_code=asset.code, expired_at__lte=now - asset.expiry_grace
        ).values_list("pk", flat=True)[: limit - len(ids)]
    return ids


def invoice_expire_due(*, batch: int | None = None) -> int:
    """The periodic sweep: close every overdue invoice, a batch per transaction, each with its webhook."""
    batch = batch or settings.INVOICE_EXPIRY_BATCH
    closed = 0
    while ids := overdue_invoice_ids(limit=batch):
        done_now = _close_batch(ids)
        closed += done_now
        if len(ids) < batch or done_now == 0:
            break  # the rest is locked by someone closing them right now, or not due after all
    return closed


@transaction.atomic
def _close_batch(ids: list[UUID]) -> int:
    now = timezone.now()
    invoices = list(
        Invoice.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("company")
        .filter(pk__in=ids, status__in=[Status.PENDING, Status.PROCESSING])
    )
    due = [i for i in invoices if i.expired_at and now >= i.expired_at + _grace(i)]
    if not due:
        return 0
    Invoice.objects.filter(pk__in=[i.pk for i in due]).update(status=Status.CLOSED, updated_at=now)
    for invoice in due:
        if invoice.paid_amount > 0:  # rare: a processing invoice with a confirmed part
            _credit_on_close(invoice)
            invoice.save(update_fields=["credited_amount", "updated_at"])
    webhook_publish_many(
        [
            (
                i.company,
                WebhookEvent.Family.INVOICE,
                str(i.pk),
                invoice_body(invoice_id=str(i.pk), status=Status.CLOSED),
            )
            for i in due
        ]
    )
    return len(due)


def _grace(invoice: Invoice) -> timedelta:
    return (
        get_asset(invoice.payment_code).expiry_grace if invoice.status == Status.PROCESSING else timedelta(0)
    )


# --- deposit routing ----------------------------------------------------------------------------------------


class InvoiceDepositHandler:
    """Deposits to invoice addresses (registered with payments.deposits in InvoicesConfig.ready)."""

    def on_seen(self, deposit: Deposit) -> None:
        invoice_payment_seen(invoice_id=self._invoice_id(deposit), deposit=deposit)

    def on_confirmed(self, deposit: Deposit) -> None:
        invoice_payment_settled(invoice_id=self._invoice_id(deposit), deposit=deposit)

    def on_failed(self, deposit: Deposit) -> None:
        invoice_payment_settled(invoice_id=self._invoice_id(deposit), deposit=deposit)

    @staticmethod
    def _invoice_id(deposit: Deposit) -> UUID:
        return Invoice.objects.values_list("pk", flat=True).get(deposit_address_id=deposit.deposit_address_id)
