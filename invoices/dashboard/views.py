"""Invoice pages: the overview, the list with filters, the create form, the detail with transactions and
timeline, accept/refund, and the payment settings (defaults for new invoices, underpayment limits)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from chains.backend import get_backend
from core.assets import INVOICE_CURRENCIES, all_assets, get_asset, price_decimals
from core.errors import DomainError, NotFound, ValidationFailed
from core.money import format_amount, number_text
from core.offer import is_offered, sandbox_codes
from invoices.dashboard.forms import (
    InvoiceCreateForm,
    InvoiceFilterForm,
    PaymentSettingsForm,
    RefundForm,
    UnderpaymentLimitsForm,
    offered_bases,
)
from invoices.limits import underpayment_limits_set
from invoices.models import Invoice, UnderpaymentLimit
from invoices.rules import ACCEPTS_PAYMENT, amount_still_due, pays_on_sandbox
from invoices.selectors import (
    invoice_deposits,
    invoice_events_for_company,
    invoice_get_for_company,
    invoice_search_for_company,
    invoice_status_counts,
)
from invoices.services import ItemInput, invoice_accept, invoice_create, invoice_refund
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view, paginate
from payments.models import Company
from payments.selectors import balance_list_for_company
from payments.services import company_set_payment_settings, company_set_redirect_url
from webhooks.models import WebhookEvent
from webhooks.selectors import webhook_list_events


def _get(company: Company, invoice_id: UUID) -> Invoice:
    try:
        return invoice_get_for_company(company=company, invoice_id=invoice_id)
    except NotFound as exc:
        raise Http404("No such invoice.") from exc


@merchant_view
def invoice_list(request: HttpRequest, company: Company) -> HttpResponse:
    filters = InvoiceFilterForm(request.GET)
    filters.is_valid()  # an unknown status is ignored, never a 500
    status = filters.cleaned_data.get("status") or None
    query = filters.cleaned_data.get("q") or ""
    page = paginate(request, invoice_search_for_company(company=company, status=status, query=query))
    context = {"company": company, "nav": "invoices", "filters": filters, "page": page}
    return render(request, "invoices/invoice_list.html", context)


@require_http_methods(["GET", "POST"])
@merchant_view
def invoice_new(request: HttpRequest, company: Company) -> HttpResponse:
    form = InvoiceCreateForm(request.POST or None, company=company)
    if request.method == "POST":
        form.read_rows(request.POST)
        if form.is_valid() and "validated" in form.cleaned_data:
            values = form.cleaned_data["validated"]
            try:
                invoice = invoice_create(
                    company=company,
                    invoice_currency=values["invoiceCurrency"],
                    items=[ItemInput(name=item["name"], price=item["price"]) for item in values["items"]],
                    is_merchant_pays_fee=values["isMerchantPaysFee"],
                    payment_currency=values.get("paymentCurrency"),
                    redirect_url=values.get("redirectURL"),
                )
            except ValidationFailed as exc:
                form.apply_errors(exc.errors)
            else:
                messages.success(request, "Invoice created. Send the pay link to your client.")
                return redirect("dashboard:invoice_detail", invoice_id=invoice.pk)
    context = {
        "company": company,
        "nav": "invoices",
        "form": form,
        "decimals_json": json.dumps(INVOICE_CURRENCIES),
    }
    return render(request, "invoices/invoice_new.html", context)


def _detail(
    request: HttpRequest, company: Company, invoice: Invoice, refund_form: RefundForm | None = None
) -> HttpResponse:
    decimals = price_decimals(invoice.invoice_currency)
    asset = get_asset(invoice.payment_code) if invoice.payment_code else None
    transactions: list[dict[str, Any]] = []
    for deposit in invoice_deposits(invoice):
        transactions.append(
            {
                "deposit": deposit,
                "link": get_backend(deposit.code).explorer_url(deposit.code, deposit.txid),
                "required": get_asset(deposit.code).confirmations,
            }
        )
    context: dict[str, Any] = {
        "company": company,
        "nav": "invoices",
        "invoice": invoice,
        "asset": asset,
        "items": [
            {"name": item.name, "price": format_amount(item.price, decimals=decimals)}
            for item in invoice.items.all()
        ],
        "total": format_amount(invoice.total, decimals=decimals),
        "transactions": transactions,
        "timeline": list(invoice_events_for_company(company=company, invoice_id=invoice.pk)),
        "pay_url": f"{settings.PAY_URL}/{invoice.pk}",
        "redirect_url": invoice.redirect_url or company.redirect_url,
        "refund_form": refund_form or RefundForm(),
        "sandbox_link": _sandbox_link(invoice),
    }
    return render(request, "invoices/invoice_detail.html", context)


def _sandbox_link(invoice: Invoice) -> str | None:
    """The sandbox panel, filled in to pay what is still missing."""
    if invoice.status not in ACCEPTS_PAYMENT or invoice.deposit_address is None or invoice.amount_due is None:
        return None
    if not pays_on_sandbox(invoice):
        return None
    missing = amount_still_due(invoice)
    query = {
        "address": invoice.deposit_address.address,
        "asset": invoice.payment_code,
        "amount": number_text(missing) if missing else number_text(invoice.amount_due),
    }
    if invoice.deposit_address.tag:
        query["tag"] = invoice.deposit_address.tag
    return f"{reverse('dashboard:sandbox')}?{urlencode(query)}"


@merchant_view
def invoice_detail(request: HttpRequest, company: Company, invoice_id: UUID) -> HttpResponse:
    return _detail(request, company, _get(company, invoice_id))


@require_POST
@merchant_view
def invoice_accept_view(request: HttpRequest, company: Company, invoice_id: UUID) -> HttpResponse:
    invoice = _get(company, invoice_id)
    try:
        invoice_accept(company=company, invoice_id=invoice.pk)
    except DomainError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Payment accepted: the invoice is done and the amount was credited.")
    return redirect("dashboard:invoice_detail", invoice_id=invoice.pk)


@require_POST
@merchant_view
def invoice_refund_view(request: HttpRequest, company: Company, invoice_id: UUID) -> HttpResponse:
    invoice = _get(company, invoice_id)
    form = RefundForm(request.POST)
    if form.is_valid():
        try:
            invoice_refund(
                company=company,
                invoice_id=invoice.pk,
                address=form.cleaned_data["address"],
                tag=form.cleaned_data["tag"],
            )
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {"to": "address"})
        except DomainError as exc:
            messages.error(request, exc.detail)
            return redirect("dashboard:invoice_detail", invoice_id=invoice.pk)
        else:
            messages.success(request, "Refund sent: the client's payment is on its way back.")
            return redirect("dashboard:invoice_detail", invoice_id=invoice.pk)
    return _detail(request, company, _get(company, invoice_id), refund_form=form)


# --- overview ------------------------------------------------------------------------------------------


@merchant_view
def overview(request: HttpRequest, company: Company) -> HttpResponse:
    balances = balance_list_for_company(company=company)
    funded = [row for row in balances if row["available"] or row["held"]]
    counts = invoice_status_counts(company=company)
    status = Invoice.Status
    context: dict[str, Any] = {
        "company": company,
        "nav": "overview",
        "balances": funded,
        "recent_invoices": list(invoice_search_for_company(company=company)[:6]),
        "failed_events": webhook_list_events(company=company, status=WebhookEvent.Status.FAILED).count(),
        "stats": [
            ("Not opened yet", counts.get(status.CREATED, 0), "created"),
            ("Awaiting payment", counts.get(status.PENDING, 0), "pending"),
            ("Confirming", counts.get(status.PROCESSING, 0), "processing"),
            ("Need your decision", counts.get(status.WRONG, 0), "wrong"),
            ("Paid", counts.get(status.DONE, 0), "done"),
        ],
        "has_sandbox": bool(sandbox_codes()),
    }
    return render(request, "invoices/overview.html", context)


# --- payment settings -----------------------------------------------------------------------------------


def _limits_initial(company: Company) -> dict[str, tuple[str, str]]:
    return {
        limit.code: (number_text(limit.static), number_text(limit.percentage))
        for limit in UnderpaymentLimit.objects.filter(company=company)
    }


def _payments_page(request: HttpRequest, company: Company, **context: Any) -> HttpResponse:
    page: dict[str, Any] = {
        "company": company,
        "nav": "payments",
        "settings_form": PaymentSettingsForm(
            initial={
                "redirect_url": company.redirect_url,
                "allowed_assets": company.allowed_assets,
                "default_fee_payer": company.default_fee_payer,
            }
        ),
        "limits_form": UnderpaymentLimitsForm(initial_limits=_limits_initial(company)),
        "assets": [asset for asset in all_assets() if is_offered(asset.code)],
    }
    page.update(context)
    return render(request, "invoices/settings_payments.html", page)


@require_http_methods(["GET", "POST"])
@merchant_view
def payment_settings(request: HttpRequest, company: Company) -> HttpResponse:
    if request.method != "POST":
        return _payments_page(request, company)
    form = PaymentSettingsForm(request.POST)
    if form.is_valid():
        try:
            with transaction.atomic():  # one form, one change: both services or neither
                company_set_payment_settings(
                    company_id=company.pk,
                    # Assets not offered here are not shown; the merchant's choice for them is kept.
                    allowed_assets=[
                        *form.cleaned_data["allowed_assets"],
                        *(base for base in company.allowed_assets if base not in offered_bases()),
                    ],
                    default_fee_payer=form.cleaned_data["default_fee_payer"],
                )
                company_set_redirect_url(company_id=company.pk, url=form.cleaned_data["redirect_url"])
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {})
        else:
            messages.success(request, "Payment settings saved.")
            return redirect("dashboard:payment_settings")
    return _payments_page(request, company, settings_form=form)


@require_POST
@merchant_view
def underpayment_limits(request: HttpRequest, company: Company) -> HttpResponse:
    form = UnderpaymentLimitsForm(request.POST)
    if not form.is_valid():
        return _payments_page(request, company, limits_form=form)
    underpayment_limits_set(company=company, limits=form.cleaned_data["limits"])
    messages.success(request, "Underpayment limits saved.")
    return redirect("dashboard:payment_settings")
