"""Static deposit addresses: the list, a new one, and whether an e-mail finds a user's address."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from chains.dashboard.deposit_forms import StaticAddressForm, StaticMatchingForm
from chains.deposit_addresses import AddressesNotReady
from chains.static_deposits import static_address_get_or_create, static_deposit_matching_set
from core.errors import ValidationFailed
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.selectors import static_address_list_for_company
from payments.dashboard.views.common import merchant_view, paginate
from payments.models import Company
from security.audit import audit_record
from security.dashboard.step_up import step_up_required

MATCHING_FORM = "matching"  # the `form` field of the switch's POST; the new-address form has none


@require_http_methods(["GET", "POST"])
@merchant_view
def static_addresses(request: HttpRequest, company: Company) -> HttpResponse:
    if request.method == "POST" and request.POST.get("form") == MATCHING_FORM:
        # Who may find whose address is a credential-grade setting: a fresh confirmation first.
        return step_up_required(_matching_set)(request, company)
    form = StaticAddressForm(request.POST or None)
    if request.method == "POST" and form.is_valid() and "validated" in form.cleaned_data:
        values = form.cleaned_data["validated"]
        try:
            static, created = static_address_get_or_create(
                company=company,
                internal_user_id=values["internal_user_id"],
                email=(values.get("email") or "").strip().lower(),
                asset=values["asset"],
                network=values["network"],
            )
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {"asset": "network"})
        except AddressesNotReady as exc:
            form.add_error(None, exc.detail)
        else:
            where = f"{static.deposit_address.address} ({static.code})"
            if static.internal_user_id != values["internal_user_id"]:
                messages.info(request, f"Found by e-mail: {static.internal_user_id} already has {where}.")
            elif created:
                messages.success(request, f"Address created for {static.internal_user_id}: {where}.")
            else:
                messages.info(request, f"{static.internal_user_id} already has this address: {where}.")
            return redirect("dashboard:static_addresses")
    context = {
        "company": company,
        "nav": "addresses",
        "form": form,
        "page": paginate(request, static_address_list_for_company(company=company)),
    }
    return render(request, "chains/static_addresses.html", context)


def _matching_set(request: HttpRequest, company: Company) -> HttpResponse:
    form = StaticMatchingForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Nothing changed: choose on or off.")
        return redirect("dashboard:static_addresses")
    match_email = bool(form.cleaned_data["match_email"])
    with transaction.atomic():
        changed = static_deposit_matching_set(company_id=company.pk, match_email=match_email)
        if changed:
            state = "on" if match_email else "off"
            audit_record(
                request,
                company=company,
                action="static_deposit_matching.change",
                detail=f"matching static addresses by e-mail turned {state}",
            )
    if not changed:
        messages.info(request, "Nothing changed.")
    elif match_email:
        messages.success(request, "Static addresses are now also found by e-mail.")
    else:
        messages.success(request, "Static addresses are now found by user id only.")
    return redirect("dashboard:static_addresses")
