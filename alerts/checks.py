"""Deployment checks of the alert channels: production refuses to start with a channel that could never send
(payments/checks.py runs every `kassa_deploy` check at start-up)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from core.checks import TAG


@register(TAG, deploy=True)
def check_alert_channels(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for address in settings.ALERT_EMAILS:
        try:
            validate_email(address)
        except ValidationError:
            errors.append(Error(f"ALERT_EMAILS: {address!r} is not an e-mail address.", id="alerts.E001"))
    url = settings.ALERT_WEBHOOK_URL
    if not url:
        return errors
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https") or not urlsplit(url).hostname:
        errors.append(Error("ALERT_WEBHOOK_URL is not an http(s) URL.", id="alerts.E002"))
    elif scheme == "http" and not settings.WEBHOOK_ALLOW_HTTP:
        errors.append(
            Error(
                "ALERT_WEBHOOK_URL uses plain http.",
                hint="Use https (or WEBHOOK_ALLOW_HTTP).",
                id="alerts.E002",
            )
        )
    if not settings.ALERT_WEBHOOK_SECRET.strip():
        errors.append(
            Error(
                "ALERT_WEBHOOK_URL is set without ALERT_WEBHOOK_SECRET: operator webhooks are always signed.",
                hint='A new secret: python -c "import secrets; print(secrets.token_urlsafe(32))"',
                id="alerts.E003",
            )
        )
    return errors
