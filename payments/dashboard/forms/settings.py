"""API credentials, webhook URL, payment settings and underpayment limits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from rest_framework import serializers

from invoices.api.settings import LimitSerializer, RedirectUrlInputSerializer
from payments.api.fields import check_asset_decimals
from payments.api.serializers import WebhookUrlInputSerializer
from payments.assets import BASE_ASSETS, get_asset
from payments.chains.base import offered_codes
from payments.dashboard.forms.base import (
    FEE_PAYER_CHOICES,
    add_field_errors,
    run_serializer,
    set_choices,
)
from payments.errors import flatten_drf_errors


class SigningSecretForm(forms.Form):
    secret = forms.CharField(
        label="New signing secret",
        strip=False,
        required=True,
        help_text="16 to 128 printable characters. Your server verifies signatures with it.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "class": "mono"}),
    )


class WebhookUrlForm(forms.Form):
    url = forms.CharField(
        label="Webhook URL",
        required=False,
        help_text="Signed POSTs about invoices, withdrawals and deposits go here. Leave empty to stop them.",
        widget=forms.URLInput(attrs={"placeholder": "https://shop.example/kassa/webhooks", "class": "mono"}),
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        validated = run_serializer(
            self, WebhookUrlInputSerializer, {"webHookUrl": data.get("url", "")}, {"webHookUrl": "url"}
        )
        if validated is not None:
            data["url"] = validated["webHookUrl"]
        return data


def offered_bases() -> set[str]:
    return {get_asset(code).base for code in offered_codes()}


class PaymentSettingsForm(forms.Form):
    redirect_url = forms.CharField(
        label="Default redirect URL",
        required=False,
        help_text="Where the client goes after a paid invoice, unless the invoice names its own.",
        widget=forms.URLInput(attrs={"placeholder": "https://shop.example/thank-you"}),
    )
    allowed_assets = forms.MultipleChoiceField(
        label="Assets clients may pay with",
        choices=[(base, base.upper()) for base in BASE_ASSETS],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Allow at least one asset."},
    )
    default_fee_payer = forms.ChoiceField(
        label="Who pays the service fee by default", choices=FEE_PAYER_CHOICES, widget=forms.RadioSelect
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only assets this deployment offers on some network; the others stay as they were (the view).
        offered = offered_bases()
        set_choices(self, "allowed_assets", [(base, base.upper()) for base in BASE_ASSETS if base in offered])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        validated = run_serializer(
            self,
            RedirectUrlInputSerializer,
            {"redirectURL": data.get("redirect_url", "")},
            {"redirectURL": "redirect_url"},
        )
        if validated is not None:
            data["redirect_url"] = validated["redirectURL"] or ""
        return data


class UnderpaymentLimitsForm(forms.Form):
    """One static + percentage pair per payment code, validated as PATCH /api/company/underpayment-limits."""

    def __init__(
        self, *args: Any, initial_limits: Mapping[str, tuple[str, str]] | None = None, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        self.codes = offered_codes()
        initial_limits = initial_limits or {}
        for code in self.codes:
            static, percentage = initial_limits.get(code, ("0", "0"))
            # strip=False: the amount is checked as written, like the API's (no spaces, ASCII digits).
            self.fields[f"static_{code}"] = forms.CharField(
                label=f"{code} static", initial=static, required=False, strip=False,
                widget=forms.TextInput(attrs={"inputmode": "decimal", "class": "num"}),
            )  # fmt: skip
            self.fields[f"percentage_{code}"] = forms.CharField(
                label=f"{code} percentage", initial=percentage, required=False, strip=False,
                widget=forms.TextInput(attrs={"inputmode": "decimal", "class": "num"}),
            )  # fmt: skip

    def rows(self) -> list[tuple[str, str, forms.BoundField, forms.BoundField]]:
        return [
            (code, get_asset(code).label, self[f"static_{code}"], self[f"percentage_{code}"])
            for code in self.codes
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        limits: dict[str, Any] = {}
        for code in self.codes:
            raw = {
                "static": data.get(f"static_{code}") or "0",
                "percentage": data.get(f"percentage_{code}") or "0",
            }
            fields = {"static": f"static_{code}", "percentage": f"percentage_{code}"}
            validated = run_serializer(self, LimitSerializer, raw, fields)
            if validated is None:
                continue
            try:
                check_asset_decimals(validated["static"], code, field="static")
            except serializers.ValidationError as exc:
                add_field_errors(self, flatten_drf_errors(exc.detail), fields)
                continue
            limits[code] = validated
        data["limits"] = limits
        return data
