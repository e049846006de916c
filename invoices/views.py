"""The hosted pay page at PAY_URL/<invoice_id> (docs/api.md) and its sandbox simulator.

Server-rendered for every status, so it works without JavaScript; static/js/pay.js adds live updates by
polling the public invoice endpoint and swapping in `?partial=live` when anything changed. Writes go
through the same services as the API: `invoice_fill`, `sandbox_deposit`, `sandbox_mine`,
`invoice_close(now=True)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_UP, Decimal, localcontext
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods, require_POST

from chains.deposit_addresses import AddressesNotReady
from chains.simulator import sandbox_deposit, sandbox_mine
from core.assets import Asset, get_asset, price_decimals
from core.errors import DomainError, InvalidState, NotFound, ValidationFailed
from core.money import MONEY_CONTEXT, format_amount, number_text, quantize
from core.offer import is_sandbox
from core.rates import RateUnavailable
from invoices.api.views import PublicInvoiceThrottle
from invoices.forms import MineForm, ProceedForm
from invoices.models import Invoice
from invoices.payuri import carries_amount, link_only, payment_uri, qr_svg, typed_tag
from invoices.rules import ACCEPTS_PAYMENT, allowed_codes, amount_still_due, sandbox_can_drive
from invoices.selectors import invoice_deposits, invoice_get_public
from invoices.services import TRANSITIONS, invoice_close, invoice_fill
from notifications.preferences import receipts_enabled

Status = Invoice.Status

# Headline of each status: page title, status badge and what screen readers hear when it changes.
STATUS_TITLES: dict[str, Any] = {
    Status.CREATED: _("Enter your details"),
    Status.PENDING: _("Awaiting payment"),
    Status.PROCESSING: _("Confirming payment"),
    Status.DONE: _("Payment complete"),
    Status.WRONG: _("Payment incomplete"),
    Status.CLOSED: _("Invoice expired"),
    Status.REFUNDED: _("Payment refunded"),
}
# The simulator acts only where a payment can still move the invoice; expiry where the table allows it.
SANDBOX_ACTIONS: dict[str, tuple[str, ...]] = {
    "pay-exact": ACCEPTS_PAYMENT,
    "pay-less": ACCEPTS_PAYMENT,
    "pay-more": ACCEPTS_PAYMENT,
    "mine": ACCEPTS_PAYMENT,
    "expire": tuple(TRANSITIONS["close"].sources),
}
LIVE_STATUSES = (Status.CREATED, Status.PENDING, Status.PROCESSING, Status.WRONG)


@dataclass(frozen=True)
class PaymentRow:
    """One transfer to the invoice's address, as the client sees it."""

    txid: str
    amount: str
    status: str
    confirmations: int
    required: int
    is_late: bool
    explorer_path: str  # the sandbox explorer (same site); empty for real chains: no external links here

    @property
    def percent(self) -> int:
        return 100 if self.required <= 0 else min(100, self.confirmations * 100 // self.required)


# --- helpers -------------------------------------------------------------------------------------------


def _invoice_or_404(invoice_id: UUID) -> Invoice:
    try:
        return invoice_get_public(invoice_id=invoice_id)
    except NotFound as exc:
        raise Http404("No such invoice.") from exc


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _throttled(request: HttpRequest) -> bool:
    # The same per-client budget as the public API (proceed and GET), shared through the cache.
    return not PublicInvoiceThrottle().allow_request(request, None)  # type: ignore[arg-type]


def _web_url(url: str) -> str:
    """`url` if it is an absolute http(s) URL, else "": nothing else reaches a link, an image or a script."""
    parts = urlsplit(url)
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else ""


def _redirect_url(invoice: Invoice) -> str:
    """The invoice's redirect URL, else the company default, else none (the page stays)."""
    return _web_url(invoice.redirect_url or invoice.company.redirect_url or "")


def _sandbox_amounts(invoice: Invoice, asset: Asset) -> dict[str, Decimal]:
    """What the simulator's payment buttons send: the rest still due, half of it, +20 %. None once all of
    it has arrived: the payment is confirming, and only blocks move the invoice on."""
    due = amount_still_due(invoice)
    if due <= 0:
        return {}
    unit = Decimal(1).scaleb(-asset.display_decimals)
    with localcontext(MONEY_CONTEXT):
        less = quantize(due / 2, decimals=asset.display_decimals, rounding=ROUND_DOWN)
        more = quantize(due * Decimal("1.2"), decimals=asset.display_decimals, rounding=ROUND_UP)
    return {"pay-exact": due, "pay-less": max(less, unit), "pay-more": more}


def _remaining_seconds(invoice: Invoice) -> int:
    if invoice.expired_at is None:
        return 0
    return max(0, int((invoice.expired_at - timezone.now()).total_seconds()))


def _clock(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _payment_rows(invoice: Invoice, asset: Asset) -> list[PaymentRow]:
    sandbox = is_sandbox(asset.code)
    return [
        PaymentRow(
            txid=d.txid,
            amount=number_text(d.amount),
            status=d.status,
            confirmations=d.confirmations,
            required=asset.confirmations,
            is_late=d.is_late,
            explorer_path=reverse("sandbox-tx", args=[d.txid]) if sandbox else "",
        )
        for d in invoice_deposits(invoice)
    ]


def _payment_context(invoice: Invoice) -> dict[str, Any]:
    """Everything a filled invoice shows: amount, address, tag, QR, deadline, payments so far."""
    asset = get_asset(invoice.payment_code)
    address = invoice.deposit_address
    assert address is not None and invoice.amount_due is not None
    due = invoice.amount_due
    with localcontext(MONEY_CONTEXT):
        missing = max(due - invoice.paid_amount, Decimal(0))
    # Underpaid: the QR asks for what is missing, so a wallet scan tops the invoice up exactly.
    to_send = missing if invoice.status == Status.WRONG else due
    uri = payment_uri(asset.code, address=address.address, amount=to_send, tag=address.tag or None)
    remaining = _remaining_seconds(invoice)
    return {
        "asset": asset,
        "symbol": asset.base.upper(),
        "address": address.address,
        "tag": typed_tag(asset.code, address.tag),
        "link_only": link_only(asset.code),
        "amount_due": number_text(due),
        "amount_to_send": number_text(to_send),
        "fee": number_text(invoice.fee or Decimal(0)),
        "client_pays_fee": not invoice.is_merchant_pays_fee and bool(invoice.fee),
        "paid": number_text(invoice.paid_amount),
        "missing": number_text(missing),
        "is_overpaid": invoice.is_overpaid,
        "payment_uri": uri,
        "qr_svg": qr_svg(uri, title=gettext("QR code for this payment")),
        "qr_has_amount": carries_amount(asset.code),
        "remaining_seconds": remaining,
        "remaining_clock": _clock(remaining),
        "can_top_up": invoice.status == Status.WRONG and remaining > 0,
        "payments": _payment_rows(invoice, asset),
    }


def _fingerprint(invoice: Invoice) -> str:
    """What pay.js compares with the public JSON to know the page is stale (same fields, same text)."""
    paid = number_text(invoice.paid_amount) if invoice.filled_at is not None else ""
    payments = ",".join(f"{d.pk}:{d.status}:{d.confirmations}" for d in invoice_deposits(invoice))
    return f"{invoice.status}|{paid}|{payments}"


def _js_text() -> dict[str, str]:
    return {
        "copied": gettext("Copied"),
        "copy": gettext("Copy"),
        "copyFailed": gettext("Could not copy: select the text and copy it by hand."),
        "expired": gettext("Time is up"),
        "redirectCancelled": gettext("Redirect cancelled."),
        "sandboxDone": gettext("Done. The page updates in a moment."),
        "sandboxFailed": gettext("The simulation failed."),
    }


def _context(invoice: Invoice, form: ProceedForm | None = None) -> dict[str, Any]:
    currency = invoice.invoice_currency
    decimals = price_decimals(currency)
    codes = allowed_codes(invoice.company)
    sandbox = sandbox_can_drive(invoice)
    context: dict[str, Any] = {
        "invoice": invoice,
        "company": invoice.company,
        "status": invoice.status,
        "status_title": STATUS_TITLES[invoice.status],
        "is_live": invoice.status in LIVE_STATUSES,
        "currency": currency.upper(),
        "items": [(item.name, format_amount(item.price, decimals=decimals)) for item in invoice.items.all()],
        "total": format_amount(invoice.total, decimals=decimals),
        "logo_url": _web_url(invoice.company.logo_url),
        "redirect_url": _redirect_url(invoice),
        "redirect_seconds": int(settings.PAY_PAGE_REDIRECT_SECONDS),
        "poll_seconds": settings.PAY_PAGE_POLL_SECONDS,
        "api_url": reverse("invoice", args=[invoice.pk]),
        "page_url": reverse("pay", args=[invoice.pk]),
        "is_sandbox": sandbox,
        "fingerprint": _fingerprint(invoice),
        "js_text": _js_text(),
    }
    if invoice.status == Status.CREATED:
        fixed = invoice.fixed_payment_code
        receipt = receipts_enabled(company_id=invoice.company_id)
        context["form"] = form or ProceedForm(codes=codes, fixed_code=fixed, receipt=receipt)
        context["fixed_asset"] = get_asset(fixed) if fixed else None
        context["asset_choices"] = [get_asset(code) for code in codes]
        context["no_assets"] = not fixed and not codes
    elif invoice.filled_at is not None:
        context.update(_payment_context(invoice))
        if sandbox and invoice.status in SANDBOX_ACTIONS["mine"]:
            amounts = _sandbox_amounts(invoice, context["asset"])
            context["sandbox"] = {
                "amounts": {key.replace("-", "_"): number_text(value) for key, value in amounts.items()},
                "blocks": context["asset"].confirmations,
                "can_expire": invoice.status in SANDBOX_ACTIONS["expire"],
            }
    return context


def _render(request: HttpRequest, invoice: Invoice, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = _context(invoice, extra.pop("form", None))
    context.update(extra)
    template = "invoices/pay/_live.html" if request.GET.get("partial") == "live" else "invoices/pay/page.html"
    return render(request, template, context, status=status)


# --- views ---------------------------------------------------------------------------------------------


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def pay_page(request: HttpRequest, invoice_id: UUID) -> HttpResponse:
    """The invoice as its client sees it; a POST is the fill form (created -> pending), then redirect."""
    invoice = _invoice_or_404(invoice_id)
    if request.method != "POST":
        return _render(request, invoice)
    if invoice.status != Status.CREATED:
        return redirect("pay", invoice_id=invoice.pk)  # filled meanwhile (another tab, a double click)
    if _throttled(request):
        return _render(request, invoice, status=429, page_error=gettext("Too many attempts. Wait a minute."))
    form = ProceedForm(
        request.POST,
        codes=allowed_codes(invoice.company),
        fixed_code=invoice.fixed_payment_code,
        receipt=receipts_enabled(company_id=invoice.company_id),
    )
    if not form.is_valid():
        return _render(request, invoice, form=form)
    try:
        invoice_fill(
            invoice_id=invoice.pk,
            client_email=form.cleaned_data["email"],
            payment_currency=form.payment_code(),
        )
    except ValidationFailed:
        # The merchant changed its accepted assets between page load and submit.
        form.add_error("asset" if "asset" in form.fields else None, gettext("This currency is not accepted."))
        return _render(request, _invoice_or_404(invoice_id), form=form)
    except InvalidState:
        pass  # filled by someone else in the meantime: the page shows what it is now
    except RateUnavailable:
        form.add_error(None, gettext("Exchange rates are unavailable right now. Try again in a minute."))
        return _render(request, invoice, form=form, status=503)
    except AddressesNotReady:
        form.add_error(None, gettext("This currency cannot take payments right now. Try again in a minute."))
        return _render(request, invoice, form=form, status=503)
    return redirect("pay", invoice_id=invoice.pk)


@never_cache
@require_POST
@csrf_exempt  # checked below, once the simulator is known to exist: where it does not, it is a 404 to all
def pay_sandbox(request: HttpRequest, invoice_id: UUID, action: str) -> HttpResponse:
    """The simulator's buttons: a payment to the invoice's own address, blocks, or expiry, then back.

    404 unless the invoice pays on the enabled sandbox chain; 409 when the action cannot apply to its status.
    """
    invoice = _invoice_or_404(invoice_id)
    if action not in SANDBOX_ACTIONS or not sandbox_can_drive(invoice):
        raise Http404("No simulator for this invoice.")
    return _pay_sandbox(request, invoice, action)


@csrf_protect
def _pay_sandbox(request: HttpRequest, invoice: Invoice, action: str) -> HttpResponse:
    if _throttled(request):
        return _refused(request, invoice, gettext("Too many attempts. Wait a minute."), status=429)
    if invoice.status not in SANDBOX_ACTIONS[action]:
        return _refused(request, invoice, gettext("This simulation does not apply to the invoice now."))
    asset = get_asset(invoice.payment_code)
    address = invoice.deposit_address
    assert address is not None
    try:
        if action == "mine":
            form = MineForm(request.POST)
            count = (form.cleaned_data["count"] if form.is_valid() else None) or asset.confirmations
            sandbox_mine(count=count, codes=[asset.code])
        elif action == "expire":
            invoice_close(invoice_id=invoice.pk, now=True)
        elif (amount := _sandbox_amounts(invoice, asset).get(action)) is None:
            message = gettext("The full amount has arrived: mine blocks to confirm it.")
            return _refused(request, invoice, message)
        else:
            sandbox_deposit(
                company=None, code=asset.code, address=address.address, tag=address.tag, amount=amount
            )
    except DomainError as exc:
        return _refused(request, invoice, str(exc.detail))
    if _wants_json(request):
        status = Invoice.objects.values_list("status", flat=True).get(pk=invoice.pk)
        return JsonResponse({"ok": True, "status": status})
    return redirect("pay", invoice_id=invoice.pk)


def _refused(request: HttpRequest, invoice: Invoice, message: str, *, status: int = 409) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"ok": False, "error": message}, status=status)
    return _render(request, invoice, status=status, sandbox_error=message)
