"""Withdrawals: list and CSV export, detail, one withdrawal, a bulk file with preview, auto-withdrawal rules.

The single and the bulk form send nothing: their checked items become a draft (withdrawals.drafts) and the
browser goes to its confirmation page (withdrawals.dashboard.confirm), which sends them once, after a step-up.
Rule changes are auto_withdrawal_rules_set (all-or-nothing), after a step-up asked for on the page.
"""

from __future__ import annotations

import csv
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from core.assets import all_assets
from core.errors import NotFound, ValidationFailed
from core.money import number_text
from core.offer import is_offered
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view, paginate
from payments.models import Company
from payments.selectors import balance_list_for_company
from security.audit import audit_record
from security.stepup import is_fresh
from webhooks.models import WebhookEvent
from webhooks.selectors import webhook_list_events
from withdrawals.auto_withdrawals import RuleInput, auto_withdrawal_rules_check, auto_withdrawal_rules_set
from withdrawals.bounces import resend_without_bounce
from withdrawals.dashboard import bulk
from withdrawals.dashboard.confirming import SecretForm, stepped_up
from withdrawals.dashboard.forms import (
    ApproveForm,
    AutoWithdrawalRulesForm,
    BulkUploadForm,
    WithdrawalFilterForm,
    WithdrawalForm,
    item_field_errors,
)
from withdrawals.drafts import Kind, payout_draft_check, payout_draft_create
from withdrawals.policy import hold_reasons
from withdrawals.selectors import (
    auto_withdrawal_list_for_company,
    withdrawal_get_for_company,
    withdrawal_list_for_company,
)
from withdrawals.services import explorer_link


@merchant_view
def withdrawal_list(request: HttpRequest, company: Company) -> HttpResponse:
    filters = WithdrawalFilterForm(request.GET)
    page = paginate(request, withdrawal_list_for_company(company=company, **filters.selector_filters()))
    rows = [
        {"withdrawal": withdrawal, "link": explorer_link(withdrawal), "hold": hold_reasons(withdrawal)}
        for withdrawal in page
    ]
    context = {"company": company, "nav": "withdrawals", "filters": filters, "page": page, "rows": rows}
    return render(request, "withdrawals/withdrawal_list.html", context)


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


def _to_confirmation(token: str) -> HttpResponse:
    response = redirect("dashboard:withdrawal_confirm", token=token)
    response.status_code = 303  # the confirmation page is a GET: a reload never posts the form again
    return response


@require_http_methods(["GET", "POST"])
@merchant_view
def withdrawal_new(request: HttpRequest, company: Company) -> HttpResponse:
    """The form checks the withdrawal as sending would (rules, limits, balance); nothing is held until the
    merchant confirms it on the next page."""
    form = WithdrawalForm(request.POST or None, initial={"asset": request.GET.get("asset", "")})
    if request.method == "POST" and form.is_valid() and "item" in form.cleaned_data:
        item = form.cleaned_data["item"]
        try:
            payout_draft_check(company=company, items=[item])
        except ValidationFailed as exc:
            add_field_errors(form, item_field_errors(exc.errors, "items[0]"), {})
        else:
            draft = payout_draft_create(company=company, kind=Kind.SINGLE, items=[item])
            return _to_confirmation(draft.token)
    context = {"company": company, "nav": "withdrawals", "form": form, "assets": _assets_context(company)}
    return render(request, "withdrawals/withdrawal_new.html", context)


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
        "hold": hold_reasons(withdrawal),
        "bounced": resend_without_bounce(withdrawal),
        "approve_form": ApproveForm(),
        "cancel_form": SecretForm(),
        "fresh": is_fresh(request),
    }
    return render(request, "withdrawals/withdrawal_detail.html", context)


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
    return render(request, "withdrawals/withdrawal_bulk.html", context)


@require_http_methods(["GET", "POST"])
@merchant_view
def withdrawal_bulk(request: HttpRequest, company: Company) -> HttpResponse:
    """Upload -> preview (every line checked) -> confirmation page (withdrawals.dashboard.confirm) -> sent."""
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
    items = [line.item for line in preview.valid]
    try:
        payout_draft_check(company=company, items=items)
    except ValidationFailed as exc:
        bulk.apply_errors(preview, exc.errors)  # nothing was held or sent
        return _bulk_page(request, company, preview=preview, text=text)
    draft = payout_draft_create(company=company, kind=Kind.BULK, items=items, skipped=len(preview.invalid))
    return _to_confirmation(draft.token)


def _rules_detail(changes: dict[str, RuleInput]) -> str:
    return "; ".join(
        f"{code} {'on' if rule.is_enabled else 'off'}, {number_text(rule.amount)}, {rule.address or '-'}"
        for code, rule in sorted(changes.items())
    )


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
            auto_withdrawal_rules_check(changes)  # the errors first, then the step-up
            if stepped_up(request, form):
                with transaction.atomic():
                    auto_withdrawal_rules_set(company=company, rules=changes)
                    audit_record(
                        request,
                        company=company,
                        action="auto_withdrawal.change",
                        detail=_rules_detail(changes),
                    )
                messages.success(request, "Auto-withdrawal rules saved.")
                return redirect("dashboard:withdrawal_rules")
        except ValidationFailed as exc:
            form.apply_errors(exc.errors)
    context = {
        "company": company,
        "nav": "withdrawals",
        "form": form,
        "sweep_seconds": int(settings.AUTO_WITHDRAWAL_SWEEP_SECONDS),
        "fresh": is_fresh(request),
    }
    return render(request, "withdrawals/withdrawal_rules.html", context)
