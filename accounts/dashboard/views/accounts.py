"""Log in (throttled), log out, and the welcome page after sign-up (views/registration.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.dashboard.forms.accounts import LoginForm
from payments.dashboard.views.common import merchant_view, pop_once
from payments.models import Company
from security import login as pending_login
from security.audit import audit_user
from security.totp import has_totp

NEW_TOKEN = "public_token"  # noqa: S105 - a session key name, not a secret


@merchant_view
def welcome(request: HttpRequest, company: Company) -> HttpResponse:
    """The public token in clear, once: the next visit finds only its prefix."""
    token = pop_once(request, NEW_TOKEN)
    if token is None:
        return redirect("dashboard:api_settings")
    return render(request, "accounts/welcome.html", {"company": company, "token": token, "nav": "api"})


class DashboardLoginView(LoginView):
    template_name = "registration/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def form_valid(self, form: Any) -> HttpResponse:
        """The right password logs in, unless the user has an authenticator: then the code page asks for
        a code first and the session stays logged out until it comes (security.login)."""
        user = form.get_user()
        if has_totp(user):
            pending_login.pending_start(self.request, user, next_url=self.get_success_url())
            return redirect("dashboard:login_code")
        response = super().form_valid(form)
        audit_user(self.request, user, "login.success", "with password")
        return response

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if getattr(form, "is_throttled", False):
            response.status_code = 429
        else:  # refused attempts of a locked pair are not logged: a flood must not fill the log
            username = str(form.cleaned_data.get("username") or "")
            pending_login.login_failed(self.request, username, "wrong password")
        return response
