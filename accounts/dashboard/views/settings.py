"""Settings: API credentials, signing secret and webhook URL."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.dashboard.forms.settings import SigningSecretForm, WebhookUrlForm
from accounts.dashboard.views.accounts import NEW_TOKEN
from core.errors import DomainError, ValidationFailed
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view, pop_once, show_once
from payments.models import Company
from payments.services import (
    company_rotate_signing_secret,
    company_set_signing_secret,
    company_set_webhook_url,
    company_signing_secret,
)
from security.audit import audit_record, token_rotate_audited
from security.dashboard.step_up import step_up_required
from webhooks.probe import webhook_send_test

NEW_SECRET = "signing_secret"  # noqa: S105 - a session key name, not a secret
TEST_RESULT = "webhook_test"


# --- API & webhooks -------------------------------------------------------------------------------------


_OVERLAP_NOTE = (
    "Until the overlap ends, the signature header stays the previous secret's and the new secret's value is "
    "sent beside it in signature-next; then signature switches to the new secret (the time is below)."
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
        "secret_form": SigningSecretForm(),
        "url_form": WebhookUrlForm(initial={"url": company.webhook_url}),
        "previous_secret_until": _overlap_until(company),
    }
    page.update(context)
    return render(request, "accounts/settings_api.html", page, status=status)


@merchant_view
def api_settings(request: HttpRequest, company: Company) -> HttpResponse:
    return _api_page(request, company)


# Each credential change needs a fresh step-up (security.stepup): a copied session cookie alone is not
# enough. Each one done is audited in the same transaction.


@require_POST
@merchant_view
@step_up_required
def token_rotate(request: HttpRequest, company: Company) -> HttpResponse:
    token = token_rotate_audited(request, company=company)
    show_once(request, NEW_TOKEN, token)
    messages.success(request, "A new public token was issued. The old one no longer works.")
    return redirect("dashboard:api_settings")


@require_POST
@merchant_view
@step_up_required
def secret_reveal(request: HttpRequest, company: Company) -> HttpResponse:
    """The current signing secret, after a fresh confirmation of the owner."""
    secret = company_signing_secret(company)
    audit_record(request, company=company, action="secret.reveal")
    return _api_page(request, company, revealed_secret=secret)


@require_POST
@merchant_view
@step_up_required
def secret_rotate(request: HttpRequest, company: Company) -> HttpResponse:
    with transaction.atomic():
        secret = company_rotate_signing_secret(company_id=company.pk)
        audit_record(request, company=company, action="secret.rotate")
    show_once(request, NEW_SECRET, secret)
    messages.success(request, "A new signing secret was generated. " + _OVERLAP_NOTE)
    return redirect("dashboard:api_settings")


@require_POST
@merchant_view
@step_up_required
def secret_set(request: HttpRequest, company: Company) -> HttpResponse:
    form = SigningSecretForm(request.POST)
    if form.is_valid():
        try:
            with transaction.atomic():
                company_set_signing_secret(company_id=company.pk, secret=form.cleaned_data["secret"])
                audit_record(request, company=company, action="secret.set", detail="chosen by the merchant")
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {})
        else:
            messages.success(request, "Your signing secret was saved. " + _OVERLAP_NOTE)
            return redirect("dashboard:api_settings")
    return _api_page(request, company, secret_form=form)


def _url_detail(url: str) -> str:
    """The host only: a webhook URL may carry a token in its path or query, the log must not."""
    return f"to a URL on {urlsplit(url).hostname or '?'}" if url else "cleared"


@require_POST
@merchant_view
@step_up_required
def webhook_url_set(request: HttpRequest, company: Company) -> HttpResponse:
    form = WebhookUrlForm(request.POST)
    if not form.is_valid():
        return _api_page(request, company, url_form=form)
    url = form.cleaned_data["url"]
    with transaction.atomic():
        company_set_webhook_url(company_id=company.pk, url=url)
        audit_record(request, company=company, action="webhook_url.set", detail=_url_detail(url))
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
