"""API credentials: the signing secret and the webhook URL."""

from __future__ import annotations

from typing import Any

from django import forms

from payments.api.serializers import WebhookUrlInputSerializer
from payments.dashboard.forms.base import (
    run_serializer,
)


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
