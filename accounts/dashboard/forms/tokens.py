"""Named API tokens: name, scopes and client networks, checked by the rule the command and the service use."""

from __future__ import annotations

from typing import Any

from django import forms

from core.errors import ValidationFailed
from payments.dashboard.forms.base import add_field_errors
from payments.tokens import ALL_SCOPES, SCOPES, api_token_rules_check


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=200,  # the rule says 100; this only stops a page-long paste early
        help_text="Where the token is used, e.g. “shop backend”. Unique among your active tokens.",
        error_messages={"required": "Give the token a name, e.g. where it is used."},
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    scopes = forms.MultipleChoiceField(
        label="Scopes",
        required=False,  # the rule says "at least one", with its own message
        choices=[(scope, scope) for scope in SCOPES],
        widget=forms.CheckboxSelectMultiple,
    )
    allowed_networks = forms.CharField(
        label="Allowed client networks",
        required=False,
        max_length=4000,
        help_text="One IPv4 or IPv6 address or network per line, e.g. 203.0.113.0/24 or 2001:db8::/48. "
        "Empty: any address.",
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono", "spellcheck": "false"}),
    )

    def __init__(
        self, *args: Any, allowed: frozenset[str] = ALL_SCOPES, role: str = "", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.allowed = allowed  # payments.roles.token_scopes of the member's role
        self.role = role

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        beyond = [
            scope for scope in data.get("scopes") or [] if scope in SCOPES and scope not in self.allowed
        ]
        if beyond:
            self.add_error(
                "scopes",
                f"Your role ({self.role or 'none'}) may not give a token {', '.join(beyond)}: "
                "a token never does more than the member who makes it.",
            )
            return data
        try:
            data["spec"] = api_token_rules_check(
                name=data.get("name", ""),
                scopes=data.get("scopes") or [],
                allowed_networks=(data.get("allowed_networks") or "").splitlines(),
            )
        except ValidationFailed as exc:
            # A field the form already refused keeps only its own message.
            add_field_errors(self, [error for error in exc.errors if error.field not in self.errors], {})
        return data

    def scope_rows(self) -> list[tuple[Any, str]]:
        """Each checkbox with what its scope allows."""
        return [
            (box, SCOPES[str(box.data["value"])])
            for box in self["scopes"]
            if box.data["value"] in self.allowed
        ]
