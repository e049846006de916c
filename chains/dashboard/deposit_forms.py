"""Static deposit addresses."""

from __future__ import annotations

from typing import Any

from django import forms

from core.assets import get_asset
from payments.dashboard.forms.base import code_choices, set_choices


class StaticAddressForm(forms.Form):
    internal_user_id = forms.CharField(
        label="Your user id", max_length=128, help_text="Your own id of the user the address belongs to."
    )
    # Django's e-mail validator, the one the API's EmailField runs.
    email = forms.EmailField(label="User e-mail", required=False, max_length=254)
    network = forms.ChoiceField(label="Network")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        set_choices(self, "network", code_choices())

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        network = data.get("network")
        if not network:
            return data
        if self.errors:
            return data
        # The network's rules (offered here, asset of the network) are static_address_get_or_create's.
        data["validated"] = {
            "internal_user_id": data["internal_user_id"],
            "email": data.get("email") or "",
            "asset": get_asset(network).base,
            "network": network,
        }
        return data


class StaticMatchingForm(forms.Form):
    """The static-address page's switch: reuse a user's address found by e-mail, or only by user id."""

    match_email = forms.TypedChoiceField(
        choices=[("on", "on"), ("off", "off")], coerce=lambda value: value == "on", empty_value=None
    )
