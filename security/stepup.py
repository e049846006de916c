"""Step-up confirmation: a fresh password or authenticator code before a sensitive dashboard action.

A copied session cookie alone must not rotate credentials or move money: the session is marked fresh for
DASHBOARD_STEP_UP_SECONDS after the owner typed a secret, and the guarded views refuse without that mark.
Failures count in the login throttle's cache under their own scope, per (username, client IP).

An action refused for want of it (a POST) is kept, not lost: the step-up page is shown in its place and
posts the action again with the secret, so once confirmed it is done and its result shown at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from payments import throttle
from payments.models import Company
from security.audit import audit_user
from security.dashboard.forms import StepUpForm
from security.totp import has_totp, verify

SCOPE = "step-up"
SESSION_KEY = "security:stepup_at"
# The step-up form shown in place of an action: its fields are prefixed so that they never meet the
# action's own (the signing-secret form has a `secret` too).
PREFIX = "step_up"
SECRET_FIELD = f"{PREFIX}-secret"
_LOCKED = "Too many wrong attempts. Wait {minutes} minutes and try again."

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


def locked_message() -> str:
    return _LOCKED.format(minutes=max(1, throttle.window_seconds() // 60))


def form_confirms(request: HttpRequest, form: StepUpForm, *, with_code: bool) -> int:
    """0 when the step-up form was posted with the owner's secret (the session is then fresh); else the
    status of the page that shows the form again, with the reason on it."""
    if not form.is_bound:
        return 200
    if not form.is_valid():
        return 400
    if confirm(request, form.cleaned_data["secret"]):
        return 0
    if is_locked(request):
        form.add_error(None, locked_message())
        return 429
    wrong = "That is neither your password nor a current code." if with_code else "That is not your password."
    form.add_error("secret", wrong)
    return 400


def step_up_page(
    request: HttpRequest, company: Company | None, form: StepUpForm, *, status: int, **context: Any
) -> HttpResponse:
    page = {
        "company": company,
        "nav": "",  # reached from any page: no section of the navigation is current
        "form": form,
        "next_url": safe_next(request, form["next"].value()),
        "with_code": has_totp(request.user),
        **context,
    }
    return render(request, "dashboard/security_step_up.html", page, status=status)


def _confirm_in_place(request: HttpRequest, company: Company | None) -> HttpResponse | None:
    """None once the secret posted along with the action confirms it is the owner (the action then runs);
    else the step-up page in the action's place, its form posting the action again with every field it
    carried. Cancel goes back to the page the action was sent from."""
    hidden = getattr(request, "sensitive_post_parameters", [])
    if hidden != "__ALL__":  # never in an error report (django.views.debug)
        request.sensitive_post_parameters = [*hidden, SECRET_FIELD]  # type: ignore[attr-defined]
    with_code = has_totp(request.user)
    back = _come_back_to(request)
    data = request.POST if SECRET_FIELD in request.POST else None
    form = StepUpForm(data, with_code=with_code, prefix=PREFIX, initial={"next": back})
    status = form_confirms(request, form, with_code=with_code)
    if status == 0:
        return None
    carried = [
        (name, value)
        for name, values in request.POST.lists()
        if name != "csrfmiddlewaretoken" and not name.startswith(f"{PREFIX}-")
        for value in values
    ]
    return step_up_page(
        request, company, form, status=status, action_url=request.get_full_path(), carried=carried
    )


def step_up_required(view: V) -> V:
    """Dashboard views (under @merchant_view or plain): without a fresh confirmation nothing runs. A page
    (GET) sends the browser (303) to the step-up page, which brings it back afterwards; an action (POST)
    gets the step-up page in its place and is carried out as soon as the secret posted with it is right."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if is_fresh(request):
            return view(request, *args, **kwargs)
        if request.method != "POST":
            response = HttpResponseRedirect(step_up_url(_come_back_to(request)))
            response.status_code = 303
            return response
        company = args[0] if args and isinstance(args[0], Company) else None
        refused = _confirm_in_place(request, company)
        return view(request, *args, **kwargs) if refused is None else refused

    return wrapped  # type: ignore[return-value]
