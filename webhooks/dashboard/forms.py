"""Webhook event list filters."""

from __future__ import annotations

from django import forms

from webhooks.models import WebhookEvent


class WebhookEventFilterForm(forms.Form):
    status = forms.ChoiceField(
        required=False, choices=[("", "Any delivery status"), *WebhookEvent.Status.choices]
    )
    family = forms.ChoiceField(required=False, choices=[("", "All events"), *WebhookEvent.Family.choices])
