"""Shared helpers of the management command tests."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command
from rest_framework.test import APIClient


def run_command(*args: str) -> str:
    """What the command printed."""
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def auth_status(token: str) -> int:
    """The status of an authenticated API call with `token` (200: it works)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.put("/api/company/settings/webhook-url", {"webHookUrl": None}, format="json").status_code
