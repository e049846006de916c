"""Payout policy forms: the cool-down and the limits per payment code, and the allowlist's new address.

The rules are withdrawals.policy's (payout_policy_check, payout_address_add); these forms carry the values,
read amounts as the other forms do (core.money.amount_input) and show the rules' errors.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from core.errors import FieldError
from core.money import InvalidAmount, amount_input, number_text
from payments.dashboard.forms.base import add_field_errors, code_choices
from withdrawals.dashboard.confirming import secret_field
from withdrawals.models import PayoutLimit
from withdrawals.policy import LIMIT_FIELDS, MAX_COOLDOWN_HOURS, LimitInput

# Form field prefix of each limit.
PREFIXES = {"max_per_withdrawal": "one", "max_per_day": "day", "approval_above": "approval"}
LABELS = {"one": "per withdrawal", "day": "per 24 hours", "approval": "approval above"}


class PayoutPolicyForm(forms.Form):
    cooldown_hours = forms.IntegerField(
        label="New-address cool-down (hours)",
        min_value=0,
        max_value=MAX_COOLDOWN_HOURS,
        help_text="A withdrawal to an address you never paid before waits this long before it is sent, "
        "unless the address is on your allowlist. 0 turns it off.",
        widget=forms.NumberInput(attrs={"class": "num", "inputmode": "numeric"}),
    )
    secret = secret_field()

    def __init__(
        self, data: Any, *, assets: list[Any], limits: dict[str, PayoutLimit], cooldown: int
    ) -> None:
        super().__init__(data, initial={"cooldown_hours": cooldown})
        self.assets = assets
        for asset in assets:
            limit = limits.get(asset.code)
            for name, prefix in PREFIXES.items():
                value = getattr(limit, name) if limit is not None else None
                self.fields[f"{prefix}_{asset.code}"] = forms.CharField(
                    label=f"{asset.code} {LABELS[prefix]}",
                    required=False,
                    strip=True,
                    max_length=64,
                    initial=number_text(value) if value is not None else "",
                    widget=forms.TextInput(
                        attrs={"inputmode": "decimal", "class": "num", "placeholder": "no limit"}
                    ),
                )

    def rows(self) -> list[dict[str, Any]]:
        return [
            {"asset": asset, **{prefix: self[f"{prefix}_{asset.code}"] for prefix in PREFIXES.values()}}
            for asset in self.assets
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        limits: dict[str, LimitInput] = {}
        for asset in self.assets:
            values: dict[str, Decimal | None] = {}
            for name, prefix in PREFIXES.items():
                key = f"{prefix}_{asset.code}"
                text = data.get(key) or ""
                try:
                    values[name] = amount_input(text) if text else None
                except InvalidAmount as exc:
                    self.add_error(key, str(exc))
            if len(values) == len(LIMIT_FIELDS):
                limits[asset.code] = LimitInput(**values)
        data["limits"] = limits
        return data

    def apply_errors(self, errors: list[FieldError]) -> None:
        """payout_policy_check's `limits.<code>.<name>` and `new_address_cooldown_hours` onto the inputs."""
        mapped = []
        for error in errors:
            _, code, name = [*error.field.split(".", 2), "", ""][:3]
            if error.field == "new_address_cooldown_hours":
                mapped.append(FieldError("cooldown_hours", error.code, error.message))
            elif name in PREFIXES:
                mapped.append(FieldError(f"{PREFIXES[name]}_{code}", error.code, error.message))
            else:
                mapped.append(error)
        add_field_errors(self, mapped, {})


class PayoutAddressForm(forms.Form):
    asset = forms.ChoiceField(label="Asset")
    address = forms.CharField(
        label="Address",
        max_length=128,
        widget=forms.TextInput(attrs={"class": "mono", "autocomplete": "off"}),
    )
    tag = forms.CharField(label="Tag / memo", required=False, max_length=64, help_text="TON only.")
    label = forms.CharField(
        label="Label", required=False, max_length=100, help_text="For you, e.g. “Cold wallet”."
    )
    secret = secret_field()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["asset"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = code_choices()
