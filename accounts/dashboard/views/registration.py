"""Sign-up confirmed by e-mail (accounts/signup.py) and the password reset, with their budgets.

Neither tells whether an address has an account: sign-up says "we sent a link to <e-mail>" and the reset
says "if an account uses that address, a link is on its way", whatever happened; what differs is only the
mail the address receives. Budgets (core.throttle): sign-ups and reset requests per client address
(429 past them), account mail per address (past it, nothing is sent and the page says the same).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.dashboard.forms.accounts import (
    LOGIN_SCOPES,
    MerchantPasswordResetForm,
    SignupConfirmForm,
    SignupForm,
)
from accounts.dashboard.views.accounts import NEW_TOKEN
from accounts.signup import (
    SignupLinkInvalid,
    SignupPasswordWrong,
    signup_confirm,
    signup_pending,
    signup_request,
)
from core import throttle
from payments.dashboard.views.common import show_once

SENT_TO = "dashboard:signup_sent_to"  # session key: the address the last sign-up mailed
CONFIRM_SCOPE = "signup-confirm"
_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _mail_off(request: HttpRequest, heading: str, message: str) -> HttpResponse | None:
    """With e-mail off (EMAIL_URL=off) a page that would mail a link says to ask the operator instead, and
    sends nothing, whatever was posted."""
    if settings.EMAIL_ENABLED:
        return None
    return render(request, "accounts/mail_off.html", {"heading": heading, "message": message})


def _require_signup() -> None:
    """With DASHBOARD_SIGNUP off, sign-up, its confirmation links and every link to them are gone."""
    if not settings.DASHBOARD_SIGNUP:
        raise Http404("Sign-up is off: ask the operator for an account.")


@never_cache
@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    _require_signup()
    if request.user.is_authenticated:
        return redirect("dashboard:overview")
    off = _mail_off(
        request,
        "Sign-up is by invitation",
        "Signing up confirms your address by e-mail, and this deployment sends no e-mail. "
        "Ask the operator of this Kassa for an account.",
    )
    if off:
        return off
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if not throttle.client_allowed("signup", request, int(settings.DASHBOARD_SIGNUP_IP_LIMIT)):
            form.add_error(None, "Too many sign-ups from your address. Try again in an hour.")
            return render(request, "accounts/signup.html", {"form": form}, status=429)
        email = form.cleaned_data["email"]
        if throttle.mail_allowed(email):
            signup_request(
                name=form.cleaned_data["name"], email=email, password=form.cleaned_data["password1"]
            )
        request.session[SENT_TO] = email
        return redirect("dashboard:signup_sent")
    return render(request, "accounts/signup.html", {"form": form})


@never_cache
def signup_sent(request: HttpRequest) -> HttpResponse:
    _require_signup()
    email = request.session.get(SENT_TO)
    if not email:
        return redirect("dashboard:signup")
    return render(request, "accounts/signup_sent.html", {"email": email})


@never_cache
@require_http_methods(["GET", "POST"])
def signup_confirm_view(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows what the link would create and asks for the password; only the POST creates it, so a
    mail scanner opening the link uses nothing up."""
    _require_signup()
    pending = signup_pending(token=token)
    if pending is None:
        return render(request, "accounts/signup_confirm.html", {"valid": False})
    form = SignupConfirmForm(request.POST or None)
    context: dict[str, Any] = {"valid": True, "pending": pending, "form": form}
    if request.method != "POST" or not form.is_valid():
        return render(request, "accounts/signup_confirm.html", context)
    ip = throttle.client_ip(request)
    if throttle.is_locked(CONFIRM_SCOPE, pending.email, ip):
        form.add_error(None, "Too many wrong passwords. Wait a few minutes, or sign up again.")
        return render(request, "accounts/signup_confirm.html", context, status=429)
    try:
        credentials = signup_confirm(token=token, password=form.cleaned_data["password"])
    except SignupPasswordWrong:
        throttle.record_failure(CONFIRM_SCOPE, pending.email, ip)
        form.add_error("password", "This is not the password you chose when you signed up.")
        return render(request, "accounts/signup_confirm.html", context)
    except SignupLinkInvalid:
        return render(request, "accounts/signup_confirm.html", {"valid": False})
    throttle.clear(CONFIRM_SCOPE, pending.email, ip)
    login(request, credentials.company.owner, backend=_BACKEND)
    show_once(request, NEW_TOKEN, credentials.public_token)
    return redirect("dashboard:welcome")


class MerchantPasswordResetView(auth_views.PasswordResetView):
    """Django's reset request, at most DASHBOARD_PASSWORD_RESET_IP_LIMIT per client address per window
    (the per-address mail budget is the form's)."""

    form_class = MerchantPasswordResetForm
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"
    success_url = reverse_lazy("dashboard:password_reset_done")

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        off = _mail_off(
            request,
            "Reset your password",
            "This deployment sends no e-mail, so it cannot mail you a reset link. "
            "Ask the operator of this Kassa to reset your password.",
        )
        return off or super().dispatch(request, *args, **kwargs)

    def form_valid(self, form: Any) -> HttpResponse:
        limit = int(settings.DASHBOARD_PASSWORD_RESET_IP_LIMIT)
        if not throttle.client_allowed("password-reset", self.request, limit):
            form.add_error(None, "Too many reset requests from your address. Try again in an hour.")
            response = self.form_invalid(form)
            response.status_code = 429
            return response
        return super().form_valid(form)


class MerchantPasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """Django's "choose a new password"; once it is set, the account's log-in counters end: the reset is
    how an owner gets back in after someone else has run them up."""

    success_url = reverse_lazy("dashboard:password_reset_complete")

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        throttle.clear_account(form.user.get_username(), throttle.client_ip(self.request), LOGIN_SCOPES)
        return response
