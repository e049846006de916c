"""Sign up, log in (throttled) and the password confirmation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from payments.dashboard import throttle


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


class LoginForm(AuthenticationForm):
    """Django's login form; refuses a (username, IP) pair after repeated failures (dashboard.throttle)."""

    THROTTLE_SCOPE = "login"
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
            self.is_throttled = True
            minutes = max(1, throttle.window_seconds() // 60)
            raise ValidationError(
                f"Too many failed log-in attempts. Wait {minutes} minutes and try again, "
                "or reset your password.",
                code="throttled",
            )
        try:
            cleaned = super().clean()
        except ValidationError:
            if username:
                throttle.record_failure(self.THROTTLE_SCOPE, username, ip)
            raise
        throttle.clear(self.THROTTLE_SCOPE, username, ip)
        return cleaned


class PasswordConfirmForm(forms.Form):
    password = forms.CharField(label="Your password", strip=False, widget=forms.PasswordInput)


class MerchantPasswordResetForm(PasswordResetForm):
    """Django's reset form, also for merchants created without a password (`create_merchant` without
    --password: "no login until a reset"). Django leaves out users without a usable password, because
    elsewhere they may log in through another system; a merchant's only way in is this password."""

    def get_users(self, email: str) -> Any:
        from payments.models import Company

        users = get_user_model()._default_manager.filter(email__iexact=email, is_active=True)
        merchants = set(Company.objects.filter(owner__in=users).values_list("owner_id", flat=True))
        return (
            user
            for user in users
            if (user.has_usable_password() or user.pk in merchants) and user.email.lower() == email.lower()
        )
