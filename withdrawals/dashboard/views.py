"""Withdrawals: list and CSV export, detail, one withdrawal, a bulk file with preview, auto-withdrawal rules.

Every write is a withdrawals service: withdrawal_request (one item or a bulk, all-or-nothing, balance
checked under the account locks) and auto_withdrawal_rules_set (the PATCH rules, all-or-nothing).
"""

from __future__ import annotations

import csv
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from chains.base import is_offered
from payments.assets import all_assets
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view, paginate
from payments.errors import NotFound, ValidationFailed
from payments.models import Company
from payments.selectors import balance_list_for_company
from webhooks.models import WebhookEvent
from webhooks.selectors import webhook_list_events
from withdrawals.auto_withdrawals import auto_withdrawal_rules_set
from withdrawals.dashboard import bulk
from withdrawals.dashboard.forms import (
    AutoWithdrawalRulesForm,
    BulkUploadForm,
    WithdrawalFilterForm,
    WithdrawalForm,
    item_field_errors,
)
from withdrawals.selectors import (
    auto_withdrawal_list_for_company,
    withdrawal_get_for_company,
    withdrawal_list_for_company,
)
from withdrawals.services import explorer_link, withdrawal_request


@merchant_view
def withdrawal_list(request: HttpRequest, company: Company) -> HttpResponse:
    filters = WithdrawalFilterForm(request.GET)
    page = paginate(request, withdrawal_list_for_company(company=company, **filters.selector_filters()))
    rows = [{"withdrawal": withdrawal, "link": explorer_link(withdrawal)} for withdrawal in page]
    context = {"company": company, "nav": "withdrawals", "filters": filters, "page": page, "rows": rows}
    return render(request, "dashboard/withdrawal_list.html", context)


class _Echo:
    """csv.writer target that hands each written line back (for a streamed response)."""

    def write(self, value: str) -> str:
        return value


@merchant_view
def withdrawal_export(request: HttpRequest, company: Company) -> StreamingHttpResponse:
    """The list as CSV, with the list's filters; streamed, so a long history never sits in memory."""
    filters = WithdrawalFilterForm(request.GET)
    withdrawals = withdrawal_list_for_company(company=company, **filters.selector_filters())
    writer = csv.writer(_Echo())
    lines = (
        writer.writerow(row) for row in bulk.export_rows(withdrawals.iterator(chunk_size=500), explorer_link)
    )
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="withdrawals-{company.uid_prefix}-{stamp}.csv"'
    return response


def _assets_context(company: Company) -> list[dict[str, Any]]:
    balances = {row["code"]: row for row in balance_list_for_company(company=company)}
    return [
        {"asset": asset, "available": balances[asset.code]["available"]}
        for asset in all_assets()
        if is_offered(asset.code)
    ]


@require_http_methods(["GET", "POST"])
@merchant_view
def withdrawal_new(request: HttpRequest, company: Company) -> HttpResponse:
    form = WithdrawalForm(request.POST or None, initial={"asset": request.GET.get("asset", "")})
    if request.method == "POST" and form.is_valid() and "item" in form.cleaned_data:
        try:
            withdrawal = withdrawal_request(company=company, items=[form.cleaned_data["item"]])[0]
        except ValidationFailed as exc:
            add_field_errors(form, item_field_errors(exc.errors, "items[0]"), {})
        else:
            messages.success(request, f"Withdrawal {withdrawal.uid} accepted: it is broadcast in a moment.")
            return redirect("dashboard:withdrawal_detail", uid=withdrawal.uid)
    context = {"company": company, "nav": "withdrawals", "form": form, "assets": _assets_context(company)}
    return render(request, "dashboard/withdrawal_new.html", context)


@merchant_view
def withdrawal_detail(request: HttpRequest, company: Company, uid: str) -> HttpResponse:
    try:
        withdrawal = withdrawal_get_for_company(company=company, uid=uid)
    except NotFound as exc:
        raise Http404("No such withdrawal.") from exc
    events = (
        webhook_list_events(company=company, family=WebhookEvent.Family.WITHDRAWAL)
        .filter(object_id=withdrawal.uid)
        .order_by("created_at", "pk")
    )
    context = {
        "company": company,
        "nav": "withdrawals",
        "withdrawal": withdrawal,
        "link": explorer_link(withdrawal),
        "events": list(events),
    }
    return render(request, "dashboard/withdrawal_detail.html", context)


def _bulk_page(
    request: HttpRequest,
    company: Company,
    form: BulkUploadForm | None = None,
    preview: bulk.Preview | None = None,
    text: str = "",
) -> HttpResponse:
    context = {
        "company": company,
        "nav": "withdrawals",
        "form": form or BulkUploadForm(),
        "preview": preview,
        "totals": preview.totals(company) if preview is not None and not preview.error else [],
        "csv_text": text,
    }
    return render(request, "dashboard/withdrawal_bulk.html", context)


@require_http_methods(["GET", "POST"])
@merchant_view
def withdrawal_bulk(request: HttpRequest, company: Company) -> HttpResponse:
    """Upload -> preview (every line checked, nothing held) -> send (withdrawal_request, all-or-nothing)."""
    if request.method != "POST":
        return _bulk_page(request, company)
    if request.POST.get("action") != "send":
        form = BulkUploadForm(request.POST, request.FILES)
        if not form.is_valid() or "csv" not in form.cleaned_data:
            return _bulk_page(request, company, form=form)
        text = form.cleaned_data["csv"]
        return _bulk_page(request, company, preview=bulk.parse(text), text=text)

    text = request.POST.get("csv", "")
    preview = bulk.parse(text)
    skip_invalid = request.POST.get("skip_invalid") == "1"
    if preview.error or not preview.valid or (preview.invalid and not skip_invalid):
        return _bulk_page(request, company, preview=preview, text=text)
    try:
        withdrawals = withdrawal_request(company=company, items=[line.item for line in preview.valid])
    except ValidationFailed as exc:
        bulk.apply_errors(preview, exc.errors)  # nothing was held or sent
        return _bulk_page(request, company, preview=preview, text=text)
    skipped = len(preview.invalid)
    first, last = withdrawals[0].uid, withdrawals[-1].uid
    messages.success(
        request,
        f"{len(withdrawals)} withdrawal{'s' if len(withdrawals) != 1 else ''} accepted "
        f"({first}{' … ' + last if last != first else ''})"
        + (f"; {skipped} invalid line{'s' if skipped != 1 else ''} left out." if skipped else "."),
    )
    return redirect("dashboard:withdrawal_list")


@require_http_methods(["GET", "POST"])
@merchant_view
def withdrawal_rules(request: HttpRequest, company: Company) -> HttpResponse:
    rules = [
        (asset, rule)
        for asset, rule in auto_withdrawal_list_for_company(company=company)
        if is_offered(asset.code)
    ]
    form = AutoWithdrawalRulesForm(request.POST or None, rules=rules)
    if request.method == "POST" and form.is_valid():
        changes = form.cleaned_data["rules"]
        if not changes:
            messages.info(request, "Nothing changed.")
            return redirect("dashboard:withdrawal_rules")
        try:
            auto_withdrawal_rules_set(company=company, rules=changes)
        except ValidationFailed as exc:
            form.apply_errors(exc.errors)
        else:
            messages.success(request, "Auto-withdrawal rules saved.")
            return redirect("dashboard:withdrawal_rules")
    context = {
        "company": company,
        "nav": "withdrawals",
        "form": form,
        "sweep_seconds": int(settings.AUTO_WITHDRAWAL_SWEEP_SECONDS),
    }
    return render(request, "dashboard/withdrawal_rules.html", context)
