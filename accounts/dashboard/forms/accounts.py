"""Sign up, log in (throttled: dashboard and admin), password reset."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from core import throttle

# The scopes whose per-account counters a password reset clears: the password and the authenticator code
# of the log-in (security/login.py counts wrong codes under "login-2fa").
LOGIN_SCOPES = ("login", "login-2fa")


class SignupForm(forms.Form):
    name = forms.CharField(label="Company name", max_length=200)
    email = forms.EmailField(label="E-mail", max_length=150)
    password1 = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters, not a common password and not only digits.",
    )
    password2 = forms.CharField(
        label="Password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean_email(self) -> str:
        return str(self.cleaned_data["email"]).strip().lower()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        first, second = data.get("password1"), data.get("password2")
        if first and second and first != second:
            self.add_error("password2", "The two passwords differ.")
        elif first:
            email = data.get("email", "")
            user = get_user_model()(username=email, email=email)
            try:
                password_validation.validate_password(first, user)
            except ValidationError as exc:
                self.add_error("password1", exc)
        return data


class SignupConfirmForm(forms.Form):
    password = forms.CharField(
        label="The password you chose",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


class LoginForm(AuthenticationForm):
    """Django's login form, refused while any of the attempt's failure counters is full (core.throttle):
    its (username, IP) pair, the account from any address, or the address over any accounts."""

    THROTTLE_SCOPE = LOGIN_SCOPES[0]
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Please enter a correct e-mail and password.",
    }

    def __init__(self, request: HttpRequest | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(request, *args, **kwargs)
        self.fields["username"].label = "E-mail"
        self.is_throttled = False

    def clean_username(self) -> str:
        return str(self.cleaned_data.get("username", "")).strip().lower()

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        ip = throttle.client_ip(self.request) if self.request else ""
        if username and throttle.is_locked(self.THROTTLE_SCOPE, username, ip):
            # Before the password is checked: a locked attempt learns nothing, right password or not.
            self.is_throttled = True
            minutes = max(1, throttle.window_seconds() // 60)
            raise ValidationError(
                f"Too many failed log-in attempts. Wait {minutes} minutes and try again, "
                "or reset your password.",
                code="throttled",
            )
        try:
            cleaned = super().clean()
            self.check_second_factor()
        except ValidationError:
            if username:
                throttle.record_failure(self.THROTTLE_SCOPE, username, ip)
            raise
        throttle.clear(self.THROTTLE_SCOPE, username, ip)
        return cleaned

    def check_second_factor(self) -> None:
        """Nothing here: the dashboard asks for the authenticator code on a page of its own after this
        form (security/login.py)."""


class AdminLoginForm(LoginForm, AdminAuthenticationForm):
    """The Django admin's log-in: staff only, the dashboard's counters (the same scope, so a guess counts
    against one budget wherever it is made), and the authenticator code of a user who has one."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        # One answer for a wrong name, password or code, and for a right password of a non-staff account.
        "invalid_login": "Please enter a correct username and password, and your authenticator code if "
        "you use one, for a staff account.",
    }
    code = forms.CharField(
        label="Authenticator code",
        required=False,
        max_length=16,
        strip=True,
        help_text="Only if your account has an authenticator app.",
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}),
    )

    def __init__(self, request: HttpRequest | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(request, *args, **kwargs)
        self.fields["username"].label = "Username"

    def clean_username(self) -> str:
        # Staff usernames are not e-mails and may have capitals: authenticate with what was typed.
        return str(self.cleaned_data.get("username", "")).strip()

    def check_second_factor(self) -> None:
        from security.totp import has_totp, verify

        user = self.get_user()
        if user is not None and has_totp(user) and not verify(user, self.cleaned_data.get("code") or ""):
            raise ValidationError(self.error_messages["invalid_login"], code="invalid_login")


class MerchantPasswordResetForm(PasswordResetForm):
    """Django's reset form, also for merchants created without a password (`create_merchant` without
    --password: "no login until a reset"). Django leaves out users without a usable password, because
    elsewhere they may log in through another system; a merchant's only way in is this password.

    At most DASHBOARD_MAIL_ADDRESS_LIMIT account mails go to one address per window, whether or not it has
    an account; past that nothing is sent and the page says what it always says."""

    def get_users(self, email: str) -> Any:
        from payments.models import Membership

        users = get_user_model()._default_manager.filter(email__iexact=email, is_active=True)
        merchants = set(Membership.objects.filter(user__in=users).values_list("user_id", flat=True))
        return (
            user
            for user in users
            if (user.has_usable_password() or user.pk in merchants) and user.email.lower() == email.lower()
        )

    def save(self, *args: Any, **kwargs: Any) -> None:
        if throttle.mail_allowed(self.cleaned_data["email"]):
            super().save(*args, **kwargs)
