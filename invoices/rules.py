"""The invoice rules the services, the API, the pages and the sweep all apply: which assets a merchant
accepts, what the client pays, how short a payment may fall, and when an invoice expires.

Each rule is one function here; nothing else restates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import ROUND_UP, Decimal, localcontext

from django.conf import settings
from django.db.models import Q

from core.assets import INVOICE_CURRENCIES, all_assets, get_asset
from core.errors import FieldError, UnsupportedAsset, UnsupportedCurrency, ValidationFailed
from core.money import MONEY_CONTEXT, InvalidAmount, check_range, decimal_places, quantize, wire_decimal
from core.offer import is_sandbox, offered_assets
from invoices.models import Invoice, UnderpaymentLimit
from invoices.selectors import invoice_deposits
from payments.models import Company, Deposit

Status = Invoice.Status
# A payment still moves an invoice in these statuses (before: not filled; after: final).
ACCEPTS_PAYMENT = (Status.PENDING, Status.PROCESSING, Status.WRONG)


# --- assets -------------------------------------------------------------------------------------------------


def allowed_codes(company: Company) -> list[str]:
    """The payment codes the company accepts that this deployment offers."""
    allowed = set(company.allowed_assets)
    return [asset.code for asset in offered_assets() if asset.base in allowed]


def allowed_bases(company: Company) -> set[str]:
    """The base assets of `allowed_codes` (usdt for trc20usdt and usdterc20)."""
    allowed = set(company.allowed_assets)
    return {asset.base for asset in offered_assets() if asset.base in allowed}


def require_allowed(company: Company, code: str, field: str) -> str:
    """`code` (any case) as the company accepts it, else ValidationFailed naming `field`."""
    try:
        code = get_asset(code).code
    except UnsupportedAsset as exc:
        raise ValidationFailed([FieldError(field, UnsupportedAsset.code, exc.detail)]) from exc
    if code not in allowed_codes(company):
        raise ValidationFailed(
            [FieldError(field, UnsupportedAsset.code, f"{code} is not accepted by this merchant")]
        )
    return code


# --- what an invoice is made of -----------------------------------------------------------------------------

ITEM_NAME_MAX_LENGTH = 500
PRICE_MAX_DIGITS, PRICE_MAX_DECIMALS = 60, 40  # more decimals than the columns: prices are rounded later


def invoice_currency_check(value: str, *, field: str = "invoiceCurrency") -> str:
    """An invoice currency (any case, spaces around), lowercase; else ValidationFailed naming `field`."""
    currency = value.strip().lower()
    if currency not in INVOICE_CURRENCIES:
        message = f"{currency!r} is not an invoice currency ({', '.join(INVOICE_CURRENCIES)})"
        raise ValidationFailed([FieldError(field, UnsupportedCurrency.code, message)])
    return currency


def item_price_check(value: object, *, field: str = "price") -> Decimal:
    """An item price as written (JSON number or numeric string, any sign), exactly; rounding to the
    currency's decimals happens in invoice_create. ValidationFailed naming `field` otherwise."""
    try:
        price = wire_decimal(value)
    except InvalidAmount as exc:
        raise ValidationFailed([FieldError(field, "invalid", str(exc))]) from exc
    whole_digits = PRICE_MAX_DIGITS - PRICE_MAX_DECIMALS
    if decimal_places(price) > PRICE_MAX_DECIMALS:
        message = f"Ensure that there are no more than {PRICE_MAX_DECIMALS} decimal places."
        raise ValidationFailed([FieldError(field, "max_decimal_places", message)])
    if not price.is_zero() and price.adjusted() + 1 > whole_digits:
        message = f"Ensure that there are no more than {whole_digits} digits before the decimal point."
        raise ValidationFailed([FieldError(field, "max_whole_digits", message)])
    try:
        check_range(price)
    except InvalidAmount as exc:
        raise ValidationFailed([FieldError(field, "invalid", "Price out of range.")]) from exc
    return price


# --- amounts ------------------------------------------------------------------------------------------------


def fee_percent(company: Company) -> Decimal:
    return company.fee_percent if company.fee_percent is not None else Decimal(settings.INVOICE_FEE_PERCENT)


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


def underpayment_tolerance(invoice: Invoice) -> Decimal:
    """How far below amount_due still completes the invoice: the larger of the static and percent limits."""
    limit = UnderpaymentLimit.objects.filter(company_id=invoice.company_id, code=invoice.payment_code).first()
    if limit is None or invoice.amount_due is None:
        return Decimal(0)
    with localcontext(MONEY_CONTEXT):
        by_percentage = invoice.amount_due * limit.percentage / 100
    return max(limit.static, by_percentage)


def amount_still_due(invoice: Invoice) -> Decimal:
    """What the client has yet to send: amount_due less what arrived and may still count (confirmed or on
    its way, not late). Reads the prefetched deposits (invoices.selectors)."""
    assert invoice.amount_due is not None
    counted = [
        deposit.amount
        for deposit in invoice_deposits(invoice)
        if not deposit.is_late and deposit.status in (Deposit.Status.SEEN, Deposit.Status.CONFIRMED)
    ]
    with localcontext(MONEY_CONTEXT):
        return max(invoice.amount_due - sum(counted, Decimal(0)), Decimal(0))


# Underpayment limits: per payment code, a static amount (at most the asset's decimals) and a percentage
# of the amount due (0 to 100, two decimals). Checked here for the API and the settings page alike.
PERCENTAGE_DECIMALS = 2
PERCENTAGE_MAX = Decimal(100)


def underpayment_limits_check(raw: object) -> dict[str, dict[str, Decimal]]:
    """`{code: {"static", "percentage"}}` as sent (JSON numbers or numeric strings), checked all or nothing:
    code -> exact Decimals, else ValidationFailed naming `assets.<code>.<field>`."""
    if not isinstance(raw, Mapping) or not raw:
        raise ValidationFailed([FieldError("assets", "required", "an object keyed by payment code")])
    errors: list[FieldError] = []
    limits: dict[str, dict[str, Decimal]] = {}
    for key, value in raw.items():
        prefix = f"assets.{key}"
        try:
            code = get_asset(key).code
        except UnsupportedAsset as exc:
            errors.append(FieldError(prefix, UnsupportedAsset.code, exc.detail))
            continue
        if not isinstance(value, Mapping):
            errors.append(FieldError(prefix, "invalid", "Must be an object with static and percentage."))
            continue
        checked = {
            "static": _limit_value(value, "static", prefix, get_asset(code).amount_decimals, None, errors),
            "percentage": _limit_value(
                value, "percentage", prefix, PERCENTAGE_DECIMALS, PERCENTAGE_MAX, errors
            ),
        }
        if all(amount is not None for amount in checked.values()):
            limits[code] = checked  # type: ignore[assignment]
    if errors:
        raise ValidationFailed(errors)
    return limits


def _limit_value(
    value: Mapping[str, object],
    name: str,
    prefix: str,
    places: int,
    maximum: Decimal | None,
    errors: list[FieldError],
) -> Decimal | None:
    field = f"{prefix}.{name}"
    if name not in value:
        errors.append(FieldError(field, "required", "This field is required."))
        return None
    try:
        amount = wire_decimal(value[name])
        check_range(amount)
    except InvalidAmount as exc:
        errors.append(FieldError(field, "invalid", str(exc)))
        return None
    if amount < 0:
        errors.append(FieldError(field, "min_value", "Ensure this value is greater than or equal to 0."))
    elif maximum is not None and amount > maximum:
        errors.append(
            FieldError(field, "max_value", f"Ensure this value is less than or equal to {maximum}.")
        )
    elif decimal_places(amount) > places and name == "static":
        code = prefix.rpartition(".")[2]
        errors.append(
            FieldError(field, "invalid", f"{get_asset(code).code} amounts have at most {places} decimals")
        )
    elif decimal_places(amount) > places:
        message = f"Ensure that there are no more than {places} decimal places."
        errors.append(FieldError(field, "max_decimal_places", message))
    else:
        return amount
    return None


def is_paid_in_full(invoice: Invoice) -> bool:
    """What confirmed covers amount_due, less the merchant's underpayment tolerance."""
    assert invoice.amount_due is not None
    return invoice.paid_amount >= invoice.amount_due - underpayment_tolerance(invoice)


# --- expiry -------------------------------------------------------------------------------------------------

# The expiry rule. An invoice expires (-> closed) at expiredAt while it waits for a payment (pending), and
# at expiredAt plus the asset's grace while a payment seen in time is still unconfirmed (processing). No
# other status expires: wrong waits for the merchant's decision, the rest are final. The sweep finds
# overdue invoices with `overdue_filter`, ingestion checks one invoice with `is_overdue`; both read this.
EXPIRING = (Status.PENDING, Status.PROCESSING)


def expiry_grace(status: str, code: str) -> timedelta | None:
    """How long after expiredAt an invoice in `status`, paying `code`, is closed (None: never)."""
    if status == Status.PENDING:
        return timedelta(0)
    if status == Status.PROCESSING:
        return get_asset(code).expiry_grace
    return None


def is_overdue(invoice: Invoice, now: datetime) -> bool:
    grace = expiry_grace(invoice.status, invoice.payment_code)
    return grace is not None and invoice.expired_at is not None and now >= invoice.expired_at + grace


def overdue_conditions(now: datetime) -> list[Q]:
    """`is_overdue` as queries: per expiring status, one condition per grace period (codes sharing one). Each
    is one range of the (status, expired_at) index, so a sweep walks it in order and stops at its batch."""
    conditions = []
    for status in EXPIRING:
        codes_by_grace: dict[timedelta, list[str]] = {}
        for asset in all_assets():
            grace = expiry_grace(status, asset.code)
            assert grace is not None
            codes_by_grace.setdefault(grace, []).append(asset.code)
        for grace, codes in codes_by_grace.items():
            conditions.append(Q(status=status, payment_code__in=codes, expired_at__lte=now - grace))
    return conditions


def overdue_filter(now: datetime) -> Q:
    """`is_overdue` as one query: any of `overdue_conditions`."""
    condition = Q(pk__in=[])
    for one in overdue_conditions(now):
        condition |= one
    return condition


# --- the sandbox ----------------------------------------------------------------------------------------


def pays_on_sandbox(invoice: Invoice) -> bool:
    """The invoice's payment (chosen or fixed by the merchant) runs on the enabled sandbox chain: its
    webhooks say `"sandbox": true`."""
    code = invoice.payment_code or invoice.fixed_payment_code
    return bool(code) and is_sandbox(code)


def sandbox_can_drive(invoice: Invoice) -> bool:
    """The simulator (pay page buttons, sandbox API and command) may act on this invoice: its payment is on
    the sandbox, or, before the client chose, some asset it may be paid with is."""
    if invoice.payment_code or invoice.fixed_payment_code:
        return pays_on_sandbox(invoice)
    return any(is_sandbox(code) for code in allowed_codes(invoice.company))
