"""The sandbox panel's forms: a test transfer and blocks to mine."""

from __future__ import annotations

from typing import Any

from django import forms

from chains.api.views import SandboxBlocksInputSerializer, SandboxDepositInputSerializer
from chains.base import sandbox_codes
from chains.simulator import MAX_BLOCKS_PER_CALL
from payments.dashboard.forms.base import code_choices, run_serializer, set_choices
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
        validated = run_serializer(
            self,
            SandboxDepositInputSerializer,
            {
                "address": data["address"],
                "asset": data["asset"],
                "amount": data["amount"],
                "tag": data.get("tag") or "",
                "outcome": data["outcome"],
            },
            {},
        )
        if validated is not None:
            data["validated"] = validated
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
        body: dict[str, Any] = {"count": data["count"]}
        if data.get("asset"):
            body["asset"] = data["asset"]
        validated = run_serializer(self, SandboxBlocksInputSerializer, body, {})
        if validated is not None:
            data["validated"] = validated
        return data
