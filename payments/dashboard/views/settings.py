"""Settings: API credentials, signing secret and webhook URL."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from payments.dashboard import throttle
from payments.dashboard.forms.accounts import PasswordConfirmForm
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.forms.settings import SigningSecretForm, WebhookUrlForm
from payments.dashboard.views.accounts import NEW_TOKEN
from payments.dashboard.views.common import merchant_view, pop_once, show_once
from payments.errors import DomainError, ValidationFailed
from payments.models import Company
from payments.services import (
    company_rotate_signing_secret,
    company_rotate_token,
    company_set_signing_secret,
    company_set_webhook_url,
    company_signing_secret,
)
from webhooks.probe import webhook_send_test

NEW_SECRET = "signing_secret"  # noqa: S105 - a session key name, not a secret
TEST_RESULT = "webhook_test"
REVEAL_SCOPE = "reveal"


# --- API & webhooks -------------------------------------------------------------------------------------


_OVERLAP_NOTE = (
    "Webhooks are signed with it from now on, and with the previous secret as well until the overlap ends."
)


def _overlap_until(company: Company) -> datetime | None:
    """When the previous secret stops signing, while a rotation's overlap lasts."""
    until = company.previous_signing_secret_until
    if not company.previous_signing_secret_encrypted or until is None or until <= timezone.now():
        return None
    return until


def _api_page(request: HttpRequest, company: Company, status: int = 200, **context: Any) -> HttpResponse:
    page: dict[str, Any] = {
        "company": company,
        "nav": "api",
        "token": pop_once(request, NEW_TOKEN),
        "new_secret": pop_once(request, NEW_SECRET),
        "test_result": pop_once(request, TEST_RESULT),
        "revealed_secret": None,
        "reveal_form": PasswordConfirmForm(),
        "secret_form": SigningSecretForm(),
        "url_form": WebhookUrlForm(initial={"url": company.webhook_url}),
        "previous_secret_until": _overlap_until(company),
    }
    page.update(context)
    return render(request, "dashboard/settings_api.html", page, status=status)


@merchant_view
def api_settings(request: HttpRequest, company: Company) -> HttpResponse:
    return _api_page(request, company)


@require_POST
@merchant_view
def token_rotate(request: HttpRequest, company: Company) -> HttpResponse:
    show_once(request, NEW_TOKEN, company_rotate_token(company_id=company.pk))
    messages.success(request, "A new public token was issued. The old one no longer works.")
    return redirect("dashboard:api_settings")


@require_POST
@merchant_view
def secret_reveal(request: HttpRequest, company: Company) -> HttpResponse:
    """The current signing secret, after the owner's password; failures count like failed logins."""
    form = PasswordConfirmForm(request.POST)
    username, ip = request.user.get_username(), throttle.client_ip(request)
    if throttle.is_locked(REVEAL_SCOPE, username, ip):
        form.is_valid()
        form.add_error("password", "Too many wrong passwords. Wait 15 minutes and try again.")
        return _api_page(request, company, status=429, reveal_form=form)
    if form.is_valid() and request.user.check_password(form.cleaned_data["password"]):
        throttle.clear(REVEAL_SCOPE, username, ip)
        return _api_page(request, company, revealed_secret=company_signing_secret(company))
    if form.is_valid():
        throttle.record_failure(REVEAL_SCOPE, username, ip)
        form.add_error("password", "That is not your password.")
    return _api_page(request, company, reveal_form=form)


@require_POST
@merchant_view
def secret_rotate(request: HttpRequest, company: Company) -> HttpResponse:
    show_once(request, NEW_SECRET, company_rotate_signing_secret(company_id=company.pk))
    messages.success(request, "A new signing secret was generated. " + _OVERLAP_NOTE)
    return redirect("dashboard:api_settings")


@require_POST
@merchant_view
def secret_set(request: HttpRequest, company: Company) -> HttpResponse:
    form = SigningSecretForm(request.POST)
    if form.is_valid():
        try:
            company_set_signing_secret(company_id=company.pk, secret=form.cleaned_data["secret"])
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {})
        else:
            messages.success(request, "Your signing secret was saved. " + _OVERLAP_NOTE)
            return redirect("dashboard:api_settings")
    return _api_page(request, company, secret_form=form)


@require_POST
@merchant_view
def webhook_url_set(request: HttpRequest, company: Company) -> HttpResponse:
    form = WebhookUrlForm(request.POST)
    if not form.is_valid():
        return _api_page(request, company, url_form=form)
    url = form.cleaned_data["url"]
    company_set_webhook_url(company_id=company.pk, url=url)
    messages.success(
        request, "Webhook URL saved." if url else "Webhook URL cleared: no webhooks will be sent."
    )
    return redirect("dashboard:api_settings")


@require_POST
@merchant_view
def webhook_test(request: HttpRequest, company: Company) -> HttpResponse:
    try:
        result = webhook_send_test(company=company)
    except DomainError as exc:
        messages.error(request, exc.detail)
        return redirect("dashboard:api_settings")
    show_once(request, TEST_RESULT, {**asdict(result), "succeeded": result.succeeded})
    return redirect("dashboard:api_settings")
