"""The step-up of the withdrawal pages, asked for inline: a form that moves money or changes the payout
rules carries a "password or authenticator code" field while the session is not fresh (security.stepup),
so the merchant confirms on the page itself, without losing what was typed. The field is checked only once
everything else on the form is valid; a fresh session (confirmed within DASHBOARD_STEP_UP_SECONDS) skips it.
"""

from __future__ import annotations

from django import forms
from django.http import HttpRequest

from core import throttle
from security.stepup import SCOPE, confirm, is_fresh, is_locked
from security.totp import verify

SECRET_FIELD = "secret"  # noqa: S105 - a form field's name
LOCKED = "Too many wrong attempts. Wait a few minutes, then try again."


def secret_field() -> forms.CharField:
    return forms.CharField(
        label="Your password or authenticator code",
        required=False,
        strip=False,
        max_length=4096,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        help_text="Moving money needs a fresh confirmation that it is you.",
    )


class SecretForm(forms.Form):
    """Just the step-up field (cancel a held withdrawal)."""

    secret = secret_field()


def stepped_up(request: HttpRequest, form: forms.Form) -> bool:
    """The session is fresh, or the secret typed into `form` made it so; otherwise an error on the field.
    An empty field is not an attempt (it counts no failure)."""
    if is_fresh(request):
        return True
    secret = str(form.data.get(form.add_prefix(SECRET_FIELD)) or "")
    if not secret:
        form.add_error(SECRET_FIELD, "Enter your password or a code from your authenticator app to confirm.")
        return False
    if confirm(request, secret):
        return True
    message = LOCKED if is_locked(request) else "That is not your password or a current authenticator code."
    form.add_error(SECRET_FIELD, message)
    return False


def code_confirmed(request: HttpRequest, code: str) -> str:
    """ "" when `code` is a current code of the user's authenticator (accepted once), else why not. Wrong
    codes count in the step-up's throttle, per user and client address, as wrong step-ups do."""
    user = request.user
    username, ip = user.get_username(), throttle.client_ip(request)
    if throttle.is_locked(SCOPE, username, ip):
        return LOCKED
    if verify(user, code):
        throttle.clear(SCOPE, username, ip)
        return ""
    throttle.record_failure(SCOPE, username, ip)
    return LOCKED if throttle.is_locked(SCOPE, username, ip) else "That is not a current authenticator code."
