"""Step-up confirmation: a fresh password or authenticator code before a sensitive dashboard action.

A copied session cookie alone must not rotate credentials or move money: the session is marked fresh for
DASHBOARD_STEP_UP_SECONDS after the owner typed a secret, and the guarded views refuse without that mark.
Failures count in the login throttle's cache under their own scope, per (username, client IP).

The views ask for it with security.dashboard.step_up.step_up_required.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from core import throttle
from security.audit import audit_user
from security.totp import has_totp, verify

SCOPE = "step-up"
SESSION_KEY = "security:stepup_at"
_LOCKED = "Too many wrong attempts. Wait {minutes} minutes and try again."


def _now() -> float:
    """The clock of freshness (tests move it)."""
    return time.time()


def _seconds() -> int:
    return int(getattr(settings, "DASHBOARD_STEP_UP_SECONDS", 300))


def is_fresh(request: HttpRequest) -> bool:
    """The logged-in owner confirmed a secret within DASHBOARD_STEP_UP_SECONDS."""
    if not request.user.is_authenticated:
        return False
    try:
        confirmed_at = float(request.session.get(SESSION_KEY, 0) or 0)
    except (TypeError, ValueError):
        return False
    age = _now() - confirmed_at
    return 0 <= age < _seconds()


def mark_fresh(request: HttpRequest) -> None:
    request.session[SESSION_KEY] = _now()


def forget(request: HttpRequest) -> None:
    request.session.pop(SESSION_KEY, None)


def confirm(request: HttpRequest, secret: str) -> bool:
    """True, and the session marked fresh, when `secret` is the user's password or a current TOTP code.

    A locked (username, IP) pair is refused even with the right secret, as a login is.
    """
    user = request.user
    if not user.is_authenticated:
        return False
    username, ip = user.get_username(), throttle.client_ip(request)
    if throttle.is_locked(SCOPE, username, ip):
        return False  # not logged each time: a flood must not fill the log (the failures before are)
    secret = secret or ""
    by_code = _looks_like_code(secret) and has_totp(user) and verify(user, secret)
    if by_code or (secret and user.check_password(secret)):
        throttle.clear(SCOPE, username, ip)
        mark_fresh(request)
        audit_user(request, user, "stepup.confirm", "with authenticator code" if by_code else "with password")
        return True
    throttle.record_failure(SCOPE, username, ip)
    audit_user(request, user, "stepup.fail")
    return False


def is_locked(request: HttpRequest) -> bool:
    return throttle.is_locked(SCOPE, request.user.get_username(), throttle.client_ip(request))


def _looks_like_code(secret: str) -> bool:
    digits = secret.replace(" ", "")
    return len(digits) == 6 and digits.isdigit()


def safe_next(request: HttpRequest, candidate: str | None, default: str = "/dashboard/") -> str:
    """`candidate` when it is a path on this host (never another site, never a scheme), else `default`."""
    if not candidate:
        return default
    if not url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return default
    parts = urlsplit(candidate)
    if not parts.path.startswith("/") or parts.path.startswith("//"):
        return default
    return parts.path + (f"?{parts.query}" if parts.query else "")


def come_back_to(request: HttpRequest) -> str:
    """Where a refused request goes back to: its own page (GET), else the same-host page it was sent from."""
    if request.method in ("GET", "HEAD"):
        return safe_next(request, request.get_full_path())
    return safe_next(request, request.META.get("HTTP_REFERER"))


def step_up_url(next_path: str) -> str:
    return f"{reverse('dashboard:step_up')}?{urlencode({'next': next_path})}"


def locked_message() -> str:
    return _LOCKED.format(minutes=max(1, throttle.window_seconds() // 60))
