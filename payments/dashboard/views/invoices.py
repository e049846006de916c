"""Invoices: list with filters, create form, detail with transactions and timeline, accept/refund."""

from __future__ import annotations

import json
from decimal import Decimal, localcontext
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from invoices.models import Invoice
from invoices.selectors import invoice_get_for_company
from invoices.services import ItemInput, invoice_accept, invoice_create, invoice_refund
from payments.addresses import InvalidAddress, validate_address
from payments.assets import INVOICE_CURRENCIES, get_asset, price_decimals
from payments.chains.base import get_backend, is_sandbox
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.forms.invoices import InvoiceCreateForm, InvoiceFilterForm, RefundForm
from payments.dashboard.selectors import invoice_events_for_company, invoice_search_for_company
from payments.dashboard.views.common import merchant_view, paginate
from payments.errors import DomainError, NotFound, ValidationFailed
from payments.models import Company
from payments.money import MONEY_CONTEXT, format_amount, number_text

SANDBOX_PAYABLE = (Invoice.Status.PENDING, Invoice.Status.PROCESSING, Invoice.Status.WRONG)


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
    return render(request, "dashboard/invoice_list.html", context)


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
    return render(request, "dashboard/invoice_new.html", context)


def _detail(
    request: HttpRequest, company: Company, invoice: Invoice, refund_form: RefundForm | None = None
) -> HttpResponse:
    decimals = price_decimals(invoice.invoice_currency)
    asset = get_asset(invoice.payment_code) if invoice.payment_code else None
    transactions: list[dict[str, Any]] = []
    deposits = getattr(invoice.deposit_address, "transactions", []) if invoice.deposit_address else []
    for deposit in deposits:
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
    return render(request, "dashboard/invoice_detail.html", context)


def _sandbox_link(invoice: Invoice) -> str | None:
    """The sandbox panel, filled in to pay what is still missing."""
    if invoice.status not in SANDBOX_PAYABLE or invoice.deposit_address is None or invoice.amount_due is None:
        return None
    if not is_sandbox(invoice.payment_code):
        return None
    with localcontext(MONEY_CONTEXT):
        missing = max(invoice.amount_due - invoice.paid_amount, Decimal(0))
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
        address = form.cleaned_data["address"]
        try:
            if invoice.payment_code:
                address = validate_address(invoice.payment_code, address)
        except InvalidAddress as exc:
            form.add_error("address", str(exc))
        else:
            try:
                invoice_refund(
                    company=company, invoice_id=invoice.pk, address=address, tag=form.cleaned_data["tag"]
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
