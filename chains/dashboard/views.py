"""The sandbox panel of the dashboard: send a test transfer, mine blocks (only while some payment code
runs on the enabled sandbox chain)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from alerts.services import open_alerts
from chains.backend import get_backend
from chains.dashboard.forms import SandboxDepositForm, SandboxMineForm
from chains.sandbox import tip_height
from chains.simulator import sandbox_deposit, sandbox_mine
from chains.status import chain_status
from core.assets import get_asset
from core.errors import DomainError, NotFound, ValidationFailed
from core.money import number_text
from core.offer import sandbox_codes
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.selectors import deposit_list_for_company
from payments.dashboard.views.common import merchant_view
from payments.models import Company, Membership


def _require_sandbox() -> list[str]:
    """The sandbox panel exists only while some payment code runs on the sandbox chain."""
    codes = sandbox_codes()
    if not codes:
        raise Http404("No payment code runs on the sandbox chain.")
    return codes


def _mine_initial(code: str) -> dict[str, Any]:
    """After a deposit: that chain, and as many blocks as it needs to confirm."""
    if code not in sandbox_codes():
        return {}
    return {"asset": code, "count": get_asset(code).confirmations}


def _sandbox_page(
    request: HttpRequest,
    company: Company,
    deposit_form: SandboxDepositForm | None = None,
    mine_form: SandboxMineForm | None = None,
) -> HttpResponse:
    codes = _require_sandbox()
    if deposit_form is None:
        wanted = {
            key: request.GET[key] for key in ("address", "asset", "amount", "tag") if key in request.GET
        }
        deposit_form = SandboxDepositForm(initial=wanted)
    chains = [{"asset": get_asset(code), "tip": tip_height(code)} for code in codes]
    deposits: list[dict[str, Any]] = [
        {"deposit": deposit, "link": get_backend(deposit.code).explorer_url(deposit.code, deposit.txid)}
        for deposit in deposit_list_for_company(company=company)[:10]
    ]
    context = {
        "company": company,
        "nav": "sandbox",
        "deposit_form": deposit_form,
        "mine_form": mine_form or SandboxMineForm(initial=_mine_initial(request.GET.get("mine", ""))),
        "chains": chains,
        "deposits": deposits,
    }
    return render(request, "chains/sandbox.html", context)


@merchant_view
def sandbox(request: HttpRequest, company: Company) -> HttpResponse:
    return _sandbox_page(request, company)


@require_POST
@merchant_view
def sandbox_deposit_view(request: HttpRequest, company: Company) -> HttpResponse:
    _require_sandbox()
    form = SandboxDepositForm(request.POST)
    if form.is_valid() and "validated" in form.cleaned_data:
        values = form.cleaned_data["validated"]
        try:
            tx = sandbox_deposit(
                company=company,
                code=values["asset"],
                address=values["address"],
                amount=values["amount"],
                tag=values.get("tag") or "",
                outcome=values["outcome"],
            )
        except NotFound:
            # The same words for another merchant's address and an unknown one (chains.simulator).
            form.add_error("address", "This is not one of your deposit addresses (with this tag).")
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {})
        except DomainError as exc:
            form.add_error(None, exc.detail)
        else:
            asset = get_asset(tx.code)
            messages.success(
                request,
                f"Sent {number_text(tx.amount)} {tx.code} to {tx.to_address}: it is in the mempool. "
                f"Mine {asset.confirmations} block{'s' if asset.confirmations != 1 else ''} to confirm it.",
            )
            return redirect(f"{reverse('dashboard:sandbox')}?{urlencode({'mine': tx.code})}")
    return _sandbox_page(request, company, deposit_form=form)


@require_POST
@merchant_view
def sandbox_mine_view(request: HttpRequest, company: Company) -> HttpResponse:
    _require_sandbox()
    form = SandboxMineForm(request.POST)
    if form.is_valid() and "validated" in form.cleaned_data:
        values = form.cleaned_data["validated"]
        asset = values.get("asset")
        try:
            tips = sandbox_mine(count=values["count"], codes=[asset] if asset else None)
        except DomainError as exc:
            form.add_error(None, exc.detail)
        else:
            where = f"{asset} (tip {tips[asset]})" if asset else "every sandbox chain"
            messages.success(request, f"Mined {values['count']} block(s) on {where}.")
            return redirect("dashboard:sandbox")
    return _sandbox_page(request, company, mine_form=form)


@never_cache
@login_required
def chain_status_view(request: HttpRequest) -> HttpResponse:
    """Staff only: where each chain stands (node, cursor, lag, payout wallet, open alerts)."""
    if not request.user.is_staff:
        raise Http404("No such page.")
    membership = Membership.objects.filter(user_id=request.user.pk).select_related("company").first()
    company = membership.company if membership else None
    rows = chain_status()
    hot: dict[str, list[str]] = {}
    for row in rows:
        if row.hot_address:
            hot.setdefault(row.hot_address, []).append(row.code)
    context = {
        "company": company,
        "nav": "status",
        "rows": rows,
        "hot_addresses": sorted((address, ", ".join(codes)) for address, codes in hot.items()),
        "alerts": open_alerts(),
    }
    return render(request, "chains/chain_status.html", context)
