"""The second step of a dashboard login: a password that was right, waiting for an authenticator code.

Until the code comes the session is not logged in; it only holds the pending user's id and when the
password was checked. The pending step expires after PENDING_SECONDS, and wrong codes count per
(username, IP) in the login throttle under their own scope, like wrong passwords do.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest

from security.audit import audit_user

SCOPE = "login-2fa"
PENDING_SECONDS = 300
_USER = "security:pending_user"
_AT = "security:pending_at"
_NEXT = "security:pending_next"
_BACKEND = "security:pending_backend"
_DEFAULT_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _now() -> float:
    """The clock of the pending step (tests move it)."""
    return time.time()


def pending_start(request: HttpRequest, user: Any, *, next_url: str) -> None:
    """Remember `user` as waiting for a code; a new session key, as a login would give."""
    request.session[_USER] = str(user.pk)
    request.session[_AT] = _now()
    request.session[_NEXT] = next_url
    request.session[_BACKEND] = getattr(user, "backend", "") or _DEFAULT_BACKEND
    request.session.cycle_key()


def pending_user(request: HttpRequest) -> Any | None:
    """The user waiting for a code in this session, None when there is none or it expired."""
    user_id, started = request.session.get(_USER), request.session.get(_AT)
    if user_id is None or started is None:
        return None
    try:
        age = _now() - float(started)
    except (TypeError, ValueError):
        age = -1.0
    if not 0 <= age < PENDING_SECONDS:
        pending_clear(request)
        return None
    return get_user_model()._default_manager.filter(pk=user_id, is_active=True).first()


def pending_finish(request: HttpRequest) -> tuple[str, str]:
    """End the pending step: where to go next and which backend checked the password."""
    next_url = str(request.session.get(_NEXT) or "")
    backend = str(request.session.get(_BACKEND) or "")
    pending_clear(request)
    if backend not in settings.AUTHENTICATION_BACKENDS:
        backend = _DEFAULT_BACKEND
    return next_url, backend


def pending_clear(request: HttpRequest) -> None:
    for key in (_USER, _AT, _NEXT, _BACKEND):
        request.session.pop(key, None)


def login_failed(request: HttpRequest, username: str, detail: str) -> None:
    """Audit a failed login in the log of the company whose owner's name was typed (nothing for names
    that are no account: the log is a company's, and there is none)."""
    if not username:
        return
    model = get_user_model()
    user = model._default_manager.filter(**{f"{model.USERNAME_FIELD}__iexact": username}).first()
    if user is not None:
        audit_user(request, user, "login.fail", detail)
