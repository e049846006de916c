"""Step-up confirmation: a fresh password or authenticator code before a sensitive dashboard action.

A copied session cookie alone must not rotate credentials or move money: the session is marked fresh for
DASHBOARD_STEP_UP_SECONDS after the owner typed a secret, and the guarded views refuse without that mark.
Failures count in the login throttle's cache under their own scope, per (username, client IP).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from payments import throttle
from security.audit import audit_user
from security.totp import has_totp, verify

SCOPE = "step-up"
SESSION_KEY = "security:stepup_at"

V = TypeVar("V", bound=Callable[..., Any])


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


def _come_back_to(request: HttpRequest) -> str:
    if request.method in ("GET", "HEAD"):
        return safe_next(request, request.get_full_path())
    return safe_next(request, request.META.get("HTTP_REFERER"))


def step_up_url(next_path: str) -> str:
    return f"{reverse('dashboard:step_up')}?{urlencode({'next': next_path})}"


def step_up_required(view: V) -> V:
    """Dashboard views (under @merchant_view or plain): without a fresh confirmation nothing runs and the
    browser goes (303) to the step-up page, which brings it back to the page afterwards."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not is_fresh(request):
            response = HttpResponseRedirect(step_up_url(_come_back_to(request)))
            response.status_code = 303
            return response
        return view(request, *args, **kwargs)

    return wrapped  # type: ignore[return-value]
