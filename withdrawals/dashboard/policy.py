"""The "Payout policy" page: limits per payment code, the new-address cool-down, approval thresholds, and the
payout address allowlist. Every change needs a step-up (asked for on the page; removing an address goes
through the step-up page) and is audited in the transaction that makes it (withdrawals.policy)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from core.assets import all_assets
from core.errors import NotFound, ValidationFailed
from core.offer import is_offered
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view
from payments.models import Company
from security.audit import audit_record
from security.dashboard.step_up import step_up_required
from security.stepup import is_fresh
from security.totp import has_totp
from withdrawals.dashboard.confirming import stepped_up
from withdrawals.dashboard.policy_forms import PayoutAddressForm, PayoutPolicyForm
from withdrawals.policy import (
    payout_address_add,
    payout_address_remove,
    payout_addresses_list,
    payout_policy_check,
    payout_policy_get,
    payout_policy_set,
)


def _policy_form(request: HttpRequest, company: Company) -> PayoutPolicyForm:
    cooldown, limits = payout_policy_get(company=company)
    assets = [asset for asset in all_assets() if is_offered(asset.code)]
    data = request.POST if request.method == "POST" and "cooldown_hours" in request.POST else None
    return PayoutPolicyForm(data, assets=assets, limits=limits, cooldown=cooldown)


def _page(
    request: HttpRequest,
    company: Company,
    *,
    form: PayoutPolicyForm | None = None,
    address_form: PayoutAddressForm | None = None,
) -> HttpResponse:
    context: dict[str, Any] = {
        "company": company,
        "nav": "withdrawals",
        "form": form or _policy_form(request, company),
        "address_form": address_form or PayoutAddressForm(prefix="address"),
        "addresses": payout_addresses_list(company=company),
        "has_2fa": has_totp(request.user),
        "fresh": is_fresh(request),
    }
    return render(request, "withdrawals/withdrawal_policy.html", context)


def _back() -> HttpResponse:
    response = redirect("dashboard:withdrawal_policy")
    response.status_code = 303
    return response


@require_http_methods(["GET", "POST"])
@merchant_view
def withdrawal_policy(request: HttpRequest, company: Company) -> HttpResponse:
    form = _policy_form(request, company)
    if request.method != "POST" or not form.is_valid():
        return _page(request, company, form=form)
    cooldown, limits = form.cleaned_data["cooldown_hours"], form.cleaned_data["limits"]
    _, errors = payout_policy_check(company=company, cooldown_hours=cooldown, limits=limits)
    if errors:  # the rules' errors first, then the step-up
        form.apply_errors(errors)
        return _page(request, company, form=form)
    if not stepped_up(request, form):
        return _page(request, company, form=form)
    try:
        with transaction.atomic():
            changes = payout_policy_set(company=company, cooldown_hours=cooldown, limits=limits)
            if changes:
                detail = "; ".join(changes)
                audit_record(request, company=company, action="payout_policy.change", detail=detail)
    except ValidationFailed as exc:
        form.apply_errors(exc.errors)
        return _page(request, company, form=form)
    messages.success(request, "Payout policy saved." if changes else "Nothing changed.")
    return _back()


@require_POST
@merchant_view
def payout_address_new(request: HttpRequest, company: Company) -> HttpResponse:
    form = PayoutAddressForm(request.POST, prefix="address")
    if not form.is_valid():
        return _page(request, company, address_form=form)
    values = {name: form.cleaned_data[name] for name in ("address", "tag", "label")}
    if not stepped_up(request, form):
        return _page(request, company, address_form=form)
    try:
        with transaction.atomic():
            entry = payout_address_add(company=company, code=form.cleaned_data["asset"], **values)
            detail = f"{entry.code} {entry.address}{f' tag {entry.tag}' if entry.tag else ''}"
            audit_record(request, company=company, action="payout_address.add", detail=detail)
    except ValidationFailed as exc:
        add_field_errors(form, exc.errors, {})
        return _page(request, company, address_form=form)
    messages.success(request, f"{entry.address} is on your allowlist: withdrawals to it skip the cool-down.")
    return _back()


@require_POST
@merchant_view
@step_up_required
def payout_address_delete(request: HttpRequest, company: Company, address_id: int) -> HttpResponse:
    try:
        with transaction.atomic():
            entry = payout_address_remove(company=company, address_id=address_id)
            detail = f"{entry.code} {entry.address}{f' tag {entry.tag}' if entry.tag else ''}"
            audit_record(request, company=company, action="payout_address.remove", detail=detail)
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    messages.success(request, f"{entry.address} was removed from your allowlist.")
    return _back()
