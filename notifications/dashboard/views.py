"""The member's own notifications page: what they are mailed about and in which language; with the
settings permission, also the company's receipts to clients."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from core.errors import ValidationFailed
from notifications.dashboard.forms import PreferenceForm
from notifications.preferences import preference_get, preference_set, receipts_enabled, receipts_set
from payments.dashboard.views.common import merchant_view
from payments.models import Company
from payments.roles import SETTINGS, may


@merchant_view
def notification_settings(request: HttpRequest, company: Company) -> HttpResponse:
    role = getattr(request, "member_role", "") or ""
    company_settings = may(role, SETTINGS)
    kinds, language = preference_get(user=request.user, role=role)
    receipts = receipts_enabled(company_id=company.pk)
    form = PreferenceForm(
        request.POST or None, initial={"kinds": sorted(kinds), "language": language, "receipts": receipts}
    )
    if request.method == "POST" and form.is_valid():
        try:
            preference_set(
                user=request.user, kinds=form.cleaned_data["kinds"], language=form.cleaned_data["language"]
            )
        except ValidationFailed:
            messages.error(request, _("Those notifications could not be saved."))
        else:
            if company_settings:  # the receipt switch is the company's: a settings permission changes it
                receipts_set(company=company, enabled=form.cleaned_data["receipts"])
            messages.success(request, _("Notifications saved."))
            return redirect("dashboard:notification_settings")
    context = {
        "nav": "notifications",
        "company": company,
        "form": form,
        "company_settings": company_settings,
        "email_enabled": settings.EMAIL_ENABLED,
    }
    return render(request, "notifications/settings.html", context)
