"""Unrouted deposits in the dashboard: the operator's staff page (list, assign, refund, each with a
confirmation step) and the merchant's payment claims. The same services as `manage.py chain unrouted`."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from alerts.dashboard.views import staff_view
from chains.claims import CLAIMS_PER_DAY, deposit_claim_create, deposit_claim_list_for_company
from chains.dashboard.unrouted_forms import (
    DepositClaimForm,
    UnroutedAssignForm,
    UnroutedKeepForm,
    UnroutedRefundForm,
)
from chains.unrouted import Target, refund_amount, unrouted_assign, unrouted_keep, unrouted_refund
from chains.unrouted_selectors import claim_list_unmatched, unrouted_get, unrouted_list
from core.assets import get_asset
from core.errors import DomainError, NotFound, ValidationFailed
from core.money import number_text
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view
from payments.models import Company


def _by(request: HttpRequest) -> str:
    user = request.user
    return str(getattr(user, "email", "") or user.get_username())


@staff_view
def unrouted_page(request: HttpRequest, company: Company | None) -> HttpResponse:
    show_all = request.GET.get("all") == "1"
    context = {
        "company": company,
        "nav": "unrouted",
        "rows": unrouted_list(open_only=not show_all),
        "show_all": show_all,
        "unmatched": claim_list_unmatched(),
    }
    return render(request, "chains/unrouted.html", context)


@require_POST
@staff_view
def unrouted_assign_view(request: HttpRequest, company: Company | None, unrouted_id: int) -> HttpResponse:
    form = UnroutedAssignForm(request.POST)
    return _act(request, company, unrouted_id, form, "assign")


@require_POST
@staff_view
def unrouted_refund_view(request: HttpRequest, company: Company | None, unrouted_id: int) -> HttpResponse:
    form = UnroutedRefundForm(request.POST)
    return _act(request, company, unrouted_id, form, "refund")


@require_POST
@staff_view
def unrouted_keep_view(request: HttpRequest, company: Company | None, unrouted_id: int) -> HttpResponse:
    form = UnroutedKeepForm(request.POST)
    return _act(request, company, unrouted_id, form, "keep")


def _act(
    request: HttpRequest, company: Company | None, unrouted_id: int, form: Any, action: str
) -> HttpResponse:
    """First post: the confirmation page, saying what will happen. Confirmed: the service, then the list."""
    row = unrouted_get(unrouted_id)
    if row is None:
        raise Http404("No such unrouted deposit.")
    if form.is_valid() and form.cleaned_data.get("confirmed"):
        values = form.cleaned_data
        try:
            if action == "assign":
                target = Target(values["target"], values["target_id"])
                unrouted_assign(unrouted_id=unrouted_id, target=target, by=_by(request), why=values["why"])
                messages.success(request, f"Deposit #{unrouted_id} credited to {target.kind} {target.id}.")
            elif action == "keep":
                unrouted_keep(unrouted_id=unrouted_id, by=_by(request), why=values["why"])
                messages.success(request, f"Deposit #{unrouted_id} is kept by the house.")
            else:
                done = unrouted_refund(
                    unrouted_id=unrouted_id,
                    to=values["to"],
                    tag=values["tag"],
                    by=_by(request),
                    why=values["why"],
                )
                messages.success(request, f"Deposit #{unrouted_id} is being refunded to {done.refund_to}.")
            return redirect("dashboard:unrouted")
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {"invoice": "target_id", "static": "target_id"})
        except NotFound as exc:
            form.add_error("target_id" if action == "assign" else None, exc.detail)
        except DomainError as exc:
            form.add_error(None, exc.detail)
    deposit = row.unrouted.deposit
    fee = get_asset(deposit.code).network_fee
    net = refund_amount(deposit)  # <= 0 is refused by the refund itself
    context = {
        "company": company,
        "nav": "unrouted",
        "row": row,
        "form": form,
        "action": action,
        "amount": number_text(deposit.amount),
        "net": number_text(net) if net > 0 else "",
        "fee": number_text(fee),
    }
    return render(request, "chains/unrouted_confirm.html", context)


@merchant_view
def payment_claims(request: HttpRequest, company: Company) -> HttpResponse:
    """The merchant names a payment its customer sent without the right tag; the operator decides."""
    form = DepositClaimForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        values = form.cleaned_data
        try:
            claim = deposit_claim_create(
                company=company,
                code=values["asset"],
                txid=values["txid"],
                invoice_id=values["invoice"],
                message=values["message"],
            )
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {})
        else:
            messages.success(
                request, f"Claim for {claim.code} transaction {claim.txid} sent to the operator."
            )
            return redirect("dashboard:payment_claims")
    context = {
        "company": company,
        "nav": "claims",
        "form": form,
        "claims": deposit_claim_list_for_company(company=company)[:100],
        "per_day": CLAIMS_PER_DAY,
    }
    return render(request, "chains/payment_claims.html", context)
