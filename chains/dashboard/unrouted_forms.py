"""The forms of the unrouted deposits' staff page and of the merchant's payment claims. Each checks its
input with the rule the service applies (chains.claims.txid_check) and shows the service's field errors."""

from __future__ import annotations

from typing import Any

from django import forms

from chains.claims import txid_check
from core.errors import ValidationFailed
from payments.dashboard.forms.base import add_field_errors, code_choices, set_choices


class UnroutedAssignForm(forms.Form):
    target = forms.ChoiceField(
        label="Credit it to", choices=[("invoice", "an invoice"), ("static", "a static address")]
    )
    target_id = forms.CharField(label="Its id", max_length=64)
    why = forms.CharField(label="Why (kept in the audit trail)", max_length=200, required=False)
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)


class UnroutedRefundForm(forms.Form):
    to = forms.CharField(label="Refund to (empty: the sender)", max_length=128, required=False)
    tag = forms.CharField(label="Receiver's tag (tagged chains)", max_length=64, required=False)
    why = forms.CharField(label="Why (kept in the audit trail)", max_length=200, required=False)
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)


class UnroutedKeepForm(forms.Form):
    why = forms.CharField(label="Why the house keeps it (kept in the audit trail)", max_length=200)
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)


class DepositClaimForm(forms.Form):
    asset = forms.ChoiceField(label="Network")
    txid = forms.CharField(label="Transaction hash", max_length=128)
    invoice = forms.CharField(label="Invoice id", max_length=64, required=False)
    message = forms.CharField(
        label="What happened",
        max_length=500,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        set_choices(self, "asset", code_choices())

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("asset") and data.get("txid"):
            try:
                data["txid"] = txid_check(data["asset"], data["txid"])
            except ValidationFailed as exc:
                add_field_errors(self, exc.errors, {})
        return data
