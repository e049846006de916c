"""Deployment checks: production refuses to start on an unsafe configuration.

Every check here is registered with the `kassa_deploy` tag and `deploy=True`, so `manage.py check --deploy`
runs it, and production settings (`KASSA_STARTUP_CHECKS = True`) run the same checks when any process
starts (web, worker, beat, manage.py), refusing to start on an error.
"""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)
from django.core.exceptions import ImproperlyConfigured

from core.checks import TAG

_MAKE_SECRET_KEY = 'python -c "import secrets; print(secrets.token_urlsafe(50))"'  # noqa: S105 - a command
_MAKE_FERNET_KEY = 'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'


@register(TAG, deploy=True)
def check_secret_key(**kwargs: Any) -> list[CheckMessage]:
    """The rule of Django's security.W009, as an error: production never signs with a guessable key."""
    try:
        key = settings.SECRET_KEY
    except ImproperlyConfigured:  # Django refuses to read an empty SECRET_KEY
        key = ""
    if not isinstance(key, str):
        key = ""
    problem = ""
    if not key:
        problem = "SECRET_KEY is not set."
    elif len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        problem = (
            f"SECRET_KEY is weak: it needs at least {SECRET_KEY_MIN_LENGTH} characters and "
            f"{SECRET_KEY_MIN_UNIQUE_CHARACTERS} different ones."
        )
    elif key.startswith(SECRET_KEY_INSECURE_PREFIX):
        problem = f"SECRET_KEY starts with {SECRET_KEY_INSECURE_PREFIX!r}: it was generated for development."
    if not problem:
        return []
    hint = f"Set the SECRET_KEY environment variable to a new random value: {_MAKE_SECRET_KEY}"
    return [Error(problem, hint=hint, id="kassa.E001")]


@register(TAG, deploy=True)
def check_field_encryption_key(**kwargs: Any) -> list[CheckMessage]:
    """Signing secrets are encrypted with these keys; a bad one would fail only at first use (keys.py)."""
    value = settings.FIELD_ENCRYPTION_KEY
    hint = f"Set the FIELD_ENCRYPTION_KEY environment variable; make a key with: {_MAKE_FERNET_KEY}"
    # Empty parts are skipped, as core/keys.py does when it builds the keys.
    keys = [key.strip() for key in value.split(",") if key.strip()] if isinstance(value, str) else []
    if not keys:
        return [Error("FIELD_ENCRYPTION_KEY is not set.", hint=hint, id="kassa.E002")]
    bad = [position for position, key in enumerate(keys, start=1) if not _is_fernet_key(key)]
    if not bad:
        return []
    # Never echo a key: it is a secret even when malformed.
    which = ", ".join(str(position) for position in bad)
    problem = (
        f"FIELD_ENCRYPTION_KEY is malformed: key number {which} of {len(keys)} (comma-separated) is not "
        "a Fernet key (urlsafe base64 of 32 bytes)."
    )
    return [Error(problem, hint=hint, id="kassa.E002")]


def _is_fernet_key(key: str) -> bool:
    try:
        Fernet(key)
    except (ValueError, TypeError):  # binascii.Error is a ValueError
        return False
    return True


@register(TAG, deploy=True)
def check_webhook_private_hosts(**kwargs: Any) -> list[CheckMessage]:
    if not settings.WEBHOOK_ALLOW_PRIVATE_HOSTS:
        return []
    return [
        Error(
            "WEBHOOK_ALLOW_PRIVATE_HOSTS is on: webhooks could be sent to loopback and private network "
            "addresses (the SSRF guard is off).",
            hint="Unset the WEBHOOK_ALLOW_PRIVATE_HOSTS environment variable (or set it to false); "
            "it is for local development receivers only.",
            id="kassa.E003",
        )
    ]


# A delivery holds its lease for at most the per-attempt deadline plus the two short database writes
# around it; the lease must outlast that, or another worker would send the same event while it still runs.
LEASE_MARGIN_SECONDS = 20


@register(TAG, deploy=True)
def check_webhook_lease(**kwargs: Any) -> list[CheckMessage]:
    lease, total = settings.WEBHOOK_LEASE_SECONDS, settings.WEBHOOK_TOTAL_TIMEOUT_SECONDS
    if lease >= total + LEASE_MARGIN_SECONDS:
        return []
    return [
        Error(
            f"WEBHOOK_LEASE_SECONDS ({lease}) does not outlast a delivery attempt ({total} s deadline + "
            f"{LEASE_MARGIN_SECONDS} s): an event could be sent twice at once.",
            hint=f"Set WEBHOOK_LEASE_SECONDS to at least {total + LEASE_MARGIN_SECONDS}.",
            id="kassa.E007",
        )
    ]


@register(TAG, deploy=True)
def check_num_proxies(**kwargs: Any) -> list[CheckMessage]:
    """Trusting X-Forwarded-Proto means a proxy is in front: with NUM_PROXIES at 0 every client would be
    the proxy's address, one budget for all (one client locks every merchant out of log-in and rate-limits
    every pay page). docs/operations.md (TLS and proxies) has the setup."""
    proxies = settings.NUM_PROXIES
    hint = (
        "Set NUM_PROXIES to the number of proxies in front of gunicorn that set X-Forwarded-For (1 for the "
        "documented nginx setup), and bind gunicorn where only the proxy can reach it (127.0.0.1)."
    )
    if not isinstance(proxies, int) or proxies < 0:
        return [
            Error(
                f"NUM_PROXIES is {proxies!r}: it must be a whole number, 0 or more.",
                hint=hint,
                id="kassa.E009",
            )
        ]
    if settings.SECURE_PROXY_SSL_HEADER and proxies == 0:
        return [
            Error(
                "NUM_PROXIES is 0 while X-Forwarded-Proto from a proxy is trusted (SECURE_PROXY_SSL_HEADER): "
                "every client would count as the proxy's address in the log-in and rate limits.",
                hint=hint,
                id="kassa.E009",
            )
        ]
    return []


# Backends that keep mail on this machine: the console one writes every mail, reset and sign-up links in
# it, to the log; the file one to disk; the memory one nowhere anyone reads.
LOCAL_MAIL_BACKENDS = frozenset(
    f"django.core.mail.backends.{name}.EmailBackend" for name in ("console", "filebased", "locmem", "dummy")
)


@register(TAG, deploy=True)
def check_mail(**kwargs: Any) -> list[CheckMessage]:
    """A real mail server, or e-mail turned off on purpose (EMAIL_URL=off): never reset links in the log."""
    if not settings.EMAIL_ENABLED or settings.EMAIL_BACKEND not in LOCAL_MAIL_BACKENDS:
        return []
    return [
        Error(
            f"No mail server: EMAIL_URL is not set and EMAIL_BACKEND is {settings.EMAIL_BACKEND}, so sign-up "
            "and password-reset mail (working links in it) would be written to the log or the disk, or lost.",
            hint="Set EMAIL_URL to your mail server (e.g. smtp+tls://user:password@smtp.example.com:587), or "
            "EMAIL_URL=off to run without e-mail: sign-up and password reset then say to ask the operator.",
            id="kassa.E011",
        )
    ]
