"""API credentials: the signing secret and the webhook URL."""

from __future__ import annotations

from typing import Any

from django import forms

from core.errors import ValidationFailed
from payments.dashboard.forms.base import add_field_errors
from payments.services import webhook_url_check


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
        try:
            data["url"] = webhook_url_check(data.get("url", ""), field="url")
        except ValidationFailed as exc:
            add_field_errors(self, exc.errors, {})
        return data
