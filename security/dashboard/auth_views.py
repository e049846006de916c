"""The step-up page and the second step of the login (authenticator or recovery code)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from core import throttle
from payments.dashboard.views.common import account_view
from payments.models import Company
from security import login as pending
from security import recovery, stepup, totp
from security.audit import audit_user
from security.dashboard.forms import LoginCodeForm, StepUpForm
from security.dashboard.step_up import form_confirms, step_up_page


def _see_other(url: str) -> HttpResponseRedirect:
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


@sensitive_post_parameters("secret")
@require_http_methods(["GET", "POST"])
@account_view
def step_up(request: HttpRequest, company: Company | None) -> HttpResponse:
    """Confirm it is the owner (password, or a code with 2FA on); then back to `next`, fresh for a while."""
    with_code = totp.has_totp(request.user)
    raw_next = request.POST.get("next") if request.method == "POST" else request.GET.get("next")
    next_url = stepup.safe_next(request, raw_next)
    form = StepUpForm(request.POST or None, with_code=with_code, initial={"next": next_url})
    status = form_confirms(request, form, with_code=with_code)
    if status == 0:
        return _see_other(next_url)
    return step_up_page(request, company, form, status=status)


@never_cache
@sensitive_post_parameters("code")
@require_http_methods(["GET", "POST"])
def login_code(request: HttpRequest) -> HttpResponse:
    """After the right password of a user with 2FA: the code (or a recovery code) before the login."""
    user = pending.pending_user(request)
    if user is None:
        if request.user.is_authenticated:
            return redirect("dashboard:overview")
        messages.info(request, "Please log in again: the code was not entered within 5 minutes.")
        return redirect("dashboard:login")
    form = LoginCodeForm(request.POST or None)
    status = 200
    username, ip = user.get_username(), throttle.client_ip(request)
    if request.method == "POST":
        if throttle.is_locked(pending.SCOPE, username, ip):
            form.is_valid()
            form.add_error(None, stepup.locked_message())  # not logged: a flood must not fill the log
            status = 429
        elif form.is_valid():
            code = form.cleaned_data["code"]
            used = "authenticator code" if totp.verify(user, code) else ""
            if not used and recovery.recovery_code_use(user=user, code=code):
                used = "recovery code"
            if used:
                throttle.clear(pending.SCOPE, username, ip)
                next_url, backend = pending.pending_finish(request)
                login(request, user, backend=backend)
                audit_user(request, user, "login.success", f"with password and {used}")
                if used == "recovery code":
                    left = recovery.recovery_codes_left(user=user)
                    audit_user(request, user, "recovery_code.use", f"{left} left")
                    messages.warning(request, f"You logged in with a recovery code: {left} left.")
                return redirect(stepup.safe_next(request, next_url))
            throttle.record_failure(pending.SCOPE, username, ip)
            audit_user(request, user, "login.fail", "wrong authenticator code")
            form.add_error("code", "That code is not right, or it was already used.")
            status = 400
        else:
            status = 400
    return render(request, "security/security_login_code.html", {"form": form}, status=status)
