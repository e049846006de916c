"""Audit of logouts (Django's LogoutView and the idle timeout both go through auth.logout)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from security.audit import audit_user

LOGOUT_REASON = "_security_logout_reason"  # set on the request by the idle timeout (security.middleware)


def audit_logout(sender: Any, request: HttpRequest | None = None, user: Any = None, **kwargs: Any) -> None:
    if user is None or not getattr(user, "is_authenticated", False):
        return
    idle = getattr(request, LOGOUT_REASON, "") == "idle"
    audit_user(request, user, "logout.idle" if idle else "logout", "after inactivity" if idle else "")
