"""Static deposit addresses, and the sandbox panel (simulated deposits and blocks)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.forms.deposits import StaticAddressForm
from payments.dashboard.selectors import static_address_list_for_company
from payments.dashboard.views.common import merchant_view, paginate
from payments.deposit_addresses import AddressesNotReady
from payments.errors import ValidationFailed
from payments.models import Company
from payments.static_deposits import static_address_get_or_create


@require_http_methods(["GET", "POST"])
@merchant_view
def static_addresses(request: HttpRequest, company: Company) -> HttpResponse:
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
            if created:
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
    return render(request, "dashboard/static_addresses.html", context)
