"""Forms of the security pages: a one-time code, and the step-up secret."""

from __future__ import annotations

from django import forms


def _code_field(label: str, help_text: str = "") -> forms.CharField:
    return forms.CharField(
        label=label,
        max_length=32,
        strip=True,
        help_text=help_text,
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "autocapitalize": "none", "spellcheck": "false"}
        ),
    )


class TotpConfirmForm(forms.Form):
    code = _code_field("Code from your app", "The 6 digits your authenticator app shows now.")


class LoginCodeForm(forms.Form):
    code = _code_field(
        "Authenticator code",
        "The 6 digits your authenticator app shows, or one of your recovery codes.",
    )


class StepUpForm(forms.Form):
    secret = forms.CharField(
        label="Password",
        max_length=256,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )
    next = forms.CharField(required=False, max_length=2048, widget=forms.HiddenInput)

    def __init__(self, *args: object, with_code: bool = False, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if with_code:
            self.fields["secret"].label = "Password or authenticator code"
            self.fields[
                "secret"
            ].help_text = "Your log-in password, or the 6 digits your authenticator app shows."
