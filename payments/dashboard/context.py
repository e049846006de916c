"""Template context of every dashboard page (TEMPLATES context_processors setting)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from core.offer import sandbox_codes
from payments.roles import ALL, ROLE_LABELS, may


def _has_route(name: str) -> bool:
    try:
        reverse(name)
    except NoReverseMatch:
        return False
    return True


def dashboard(request: HttpRequest) -> dict[str, Any]:
    """Which optional sections the navigation shows; nothing for pages outside the dashboard."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.namespace != "dashboard":
        return {}
    role = getattr(request, "member_role", None) or ""
    return {
        # What the member's role may do (payments.roles): the navigation and the pages offer only that.
        "can": {permission: may(role, permission) for permission in ALL},
        "member_role": ROLE_LABELS.get(role, ""),
        "sandbox_enabled": bool(sandbox_codes()),
        "withdrawals_enabled": _has_route("dashboard:withdrawal_list"),
        "signup_enabled": bool(settings.DASHBOARD_SIGNUP),  # the log-in page's link to sign-up
    }
