"""Forms of the security pages: a one-time code, and the step-up secret."""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms

from security.selectors import ACTION_LABELS


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


class AuditFilterForm(forms.Form):
    """The audit log's filters (GET): one member, one action, a range of UTC days. A value that is not one
    (edited by hand) filters nothing and shows its error, rather than failing the page."""

    member = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
    action = forms.ChoiceField(required=False)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args: Any, members: list[tuple[int, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        member = self.fields["member"]
        assert isinstance(member, forms.ChoiceField)
        member.choices = [("", "Every member"), *members]
        action = self.fields["action"]
        assert isinstance(action, forms.ChoiceField)
        labels = sorted(ACTION_LABELS.items(), key=lambda pair: pair[1])
        action.choices = [("", "Every action"), *labels]

    def selector_filters(self) -> dict[str, Any]:
        self.is_valid()  # the fields that are valid filter; the others show their error
        data = self.cleaned_data
        since: date | None = data.get("since")
        until: date | None = data.get("until")
        return {
            "user_id": data.get("member"),
            "action": data.get("action") or None,
            "since": since,
            "until": until,
        }
