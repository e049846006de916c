"""The sandbox panel's forms: a test transfer and blocks to mine."""

from __future__ import annotations

from typing import Any

from django import forms

from chains.simulator import MAX_BLOCKS_PER_CALL
from core.money import InvalidAmount, amount_input
from core.offer import sandbox_codes
from payments.dashboard.forms.base import code_choices, set_choices
from payments.models import SandboxTransaction


class SandboxDepositForm(forms.Form):
    address = forms.CharField(
        label="To address", max_length=128, widget=forms.TextInput(attrs={"class": "mono"})
    )
    asset = forms.ChoiceField(label="Asset")
    amount = forms.CharField(
        label="Amount", strip=False, widget=forms.TextInput(attrs={"inputmode": "decimal"})
    )
    tag = forms.CharField(label="Tag / memo", required=False, max_length=64)
    outcome = forms.ChoiceField(
        label="Outcome once mined",
        choices=[
            (SandboxTransaction.Outcome.CONFIRM.value, "Confirms"),
            (SandboxTransaction.Outcome.FAIL.value, "Fails on chain"),
            (SandboxTransaction.Outcome.FREEZE.value, "Frozen by compliance"),
        ],
        initial=SandboxTransaction.Outcome.CONFIRM,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        set_choices(self, "asset", code_choices(sandbox_codes()))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            amount = amount_input(data["amount"])
        except InvalidAmount as exc:
            self.add_error("amount", str(exc))
            return data
        # The address and the amount's decimals for the asset are sandbox_deposit's checks.
        data["validated"] = {**data, "amount": amount, "tag": data.get("tag") or ""}
        return data


class SandboxMineForm(forms.Form):
    count = forms.IntegerField(label="Blocks", min_value=1, max_value=MAX_BLOCKS_PER_CALL, initial=1)
    asset = forms.ChoiceField(label="Chain", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        set_choices(self, "asset", [("", "Every sandbox chain"), *code_choices(sandbox_codes())])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        # The form's fields bound the count and the chain as sandbox_mine does.
        data["validated"] = {"count": data["count"], "asset": data.get("asset") or None}
        return data
