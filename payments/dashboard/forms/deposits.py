"""Static deposit addresses."""

from __future__ import annotations

from typing import Any

from django import forms

from payments.api.deposits import (
    StaticDepositInputSerializer,
)
from payments.assets import get_asset
from payments.dashboard.forms.base import (
    code_choices,
    run_serializer,
    set_choices,
)


class StaticAddressForm(forms.Form):
    internal_user_id = forms.CharField(
        label="Your user id", max_length=128, help_text="Your own id of the user the address belongs to."
    )
    email = forms.CharField(label="User e-mail", required=False, max_length=254)
    network = forms.ChoiceField(label="Network")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        set_choices(self, "network", code_choices())

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        network = data.get("network")
        if not network:
            return data
        validated = run_serializer(
            self,
            StaticDepositInputSerializer,
            {
                "internal_user_id": data.get("internal_user_id", ""),
                "email": data.get("email") or None,
                "asset": get_asset(network).base,
                "network": network,
            },
            {},
        )
        if validated is not None:
            data["validated"] = validated
        return data
