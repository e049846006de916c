"""Idle timeout of logged-in sessions, and the 2FA requirements of the dashboard: the server's
(DASHBOARD_REQUIRE_2FA, every user, every page) and a company's (security.requirements: its members, every
page but the security overview).

The last-seen time is written at most once a minute (SEEN_EVERY_SECONDS), not on every request: a page
that polls must not turn each request into a session write. A session idle longer than
DASHBOARD_IDLE_TIMEOUT_SECONDS is logged out; on a dashboard page the browser goes to the login page with
a message, elsewhere the request goes on as anonymous.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.urls import reverse

from security.receivers import LOGOUT_REASON
from security.requirements import member_must_enrol
from security.totp import has_totp

SEEN_KEY = "security:seen_at"
SEEN_EVERY_SECONDS = 60
NAMESPACE = "dashboard"
# Reachable without an authenticator when DASHBOARD_REQUIRE_2FA is on: leaving, and enrolling.
ENROLMENT_FLOW = frozenset({"logout", "login", "login_code", "step_up", "totp_enrol", "recovery_codes"})
# Reachable when the member's company requires 2FA: the flow, and the page that says why.
COMPANY_ENROLMENT_FLOW = ENROLMENT_FLOW | {"security"}


def _now() -> float:
    """The clock of idleness (tests move it)."""
    return time.time()


class IdleTimeoutMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> HttpResponseBase | None:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        match = request.resolver_match
        on_dashboard = match is not None and match.namespace == NAMESPACE
        now = _now()
        seen = _seen_at(request)
        if seen is not None and now - seen > int(settings.DASHBOARD_IDLE_TIMEOUT_SECONDS):
            return self._log_out(request, on_dashboard)
        if seen is None or now - seen >= SEEN_EVERY_SECONDS:
            request.session[SEEN_KEY] = now
        if (
            on_dashboard
            and settings.DASHBOARD_REQUIRE_2FA
            and match is not None
            and match.url_name not in ENROLMENT_FLOW
            and not has_totp(user)
        ):
            return HttpResponseRedirect(reverse("dashboard:totp_enrol"))
        if (
            on_dashboard
            and match is not None
            and match.url_name not in COMPANY_ENROLMENT_FLOW
            and member_must_enrol(user)
        ):
            messages.info(request, "Your company requires two-factor authentication: turn it on to go on.")
            return HttpResponseRedirect(reverse("dashboard:totp_enrol"))
        return None

    def _log_out(self, request: HttpRequest, on_dashboard: bool) -> HttpResponse | None:
        setattr(request, LOGOUT_REASON, "idle")
        logout(request)  # flushes the session: a new key, nothing of the old one kept
        if not on_dashboard:
            return None
        minutes = max(1, int(settings.DASHBOARD_IDLE_TIMEOUT_SECONDS) // 60)
        messages.info(request, f"You were logged out after {minutes} minutes without activity.")
        target = reverse("dashboard:login")
        if request.method in ("GET", "HEAD"):
            target += "?" + urlencode({"next": request.get_full_path()})
        response = HttpResponseRedirect(target)
        response.status_code = 303
        return response


def _seen_at(request: HttpRequest) -> float | None:
    try:
        value = request.session.get(SEEN_KEY)
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None
