"""The team page's forms: invite (e-mail, role), change a role, and the invited person's new password.
The rules (who may give which role, one membership per user) are payments.members', shown as its errors."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.password_validation import validate_password

from payments.roles import OWNER, ROLE_LABELS, ROLES


def role_choices(actor_role: str) -> list[tuple[str, str]]:
    """The roles `actor_role` may give: an admin gives every role but owner."""
    return [(role, ROLE_LABELS[role]) for role in ROLES if role != OWNER or actor_role == OWNER]


class InviteForm(forms.Form):
    email = forms.EmailField(label="E-mail", max_length=254)
    role = forms.ChoiceField(label="Role", choices=[])

    def __init__(self, *args: Any, actor_role: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = role_choices(actor_role)  # type: ignore[attr-defined]
        self.fields["role"].initial = "viewer"


class RoleForm(forms.Form):
    role = forms.ChoiceField(label="Role", choices=[(role, ROLE_LABELS[role]) for role in ROLES])


class AcceptSignupForm(forms.Form):
    password1 = forms.CharField(
        label="Password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    password2 = forms.CharField(
        label="Password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def __init__(self, *args: Any, email: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.email = email

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        first, second = data.get("password1"), data.get("password2")
        if first and second and first != second:
            self.add_error("password2", "The two passwords differ.")
        elif first:
            try:
                validate_password(first, user=_Named(self.email))  # type: ignore[arg-type]
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


class _Named:
    """What the similarity validator compares the password with, before the user exists."""

    def __init__(self, email: str) -> None:
        self.email = self.username = email
