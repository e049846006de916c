"""Sign up, log in (throttled), log out; password reset is Django's own views (see urls.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import login
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from payments.dashboard.forms.accounts import LoginForm, SignupForm
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view, pop_once, show_once
from payments.errors import ValidationFailed
from payments.models import Company
from payments.services import merchant_create

NEW_TOKEN = "public_token"  # noqa: S105 - a session key name, not a secret


@never_cache
@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("dashboard:overview")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            credentials = merchant_create(
                name=form.cleaned_data["name"],
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password1"],
            )
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {})
        else:
            login(request, credentials.company.owner, backend="django.contrib.auth.backends.ModelBackend")
            show_once(request, NEW_TOKEN, credentials.public_token)
            return redirect("dashboard:welcome")
    return render(request, "dashboard/signup.html", {"form": form})


@merchant_view
def welcome(request: HttpRequest, company: Company) -> HttpResponse:
    """The public token in clear, once: the next visit finds only its prefix."""
    token = pop_once(request, NEW_TOKEN)
    if token is None:
        return redirect("dashboard:api_settings")
    return render(request, "dashboard/welcome.html", {"company": company, "token": token, "nav": "api"})


class DashboardLoginView(LoginView):
    template_name = "registration/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if getattr(form, "is_throttled", False):
            response.status_code = 429
        return response
