"""Wire formats shared by every API and webhook (docs/decisions.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rest_framework import serializers


def iso_utc(moment: datetime) -> str:
    """ISO 8601 UTC with milliseconds and Z: 2026-11-22T03:24:48.123Z."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class TimestampField(serializers.DateTimeField):
    def to_representation(self, value: datetime) -> str | None:  # type: ignore[override]
        return iso_utc(value) if value else None


def mark_sandbox(body: dict[str, Any], sandbox: bool) -> dict[str, Any]:
    """A webhook body of simulated money carries one more key after the documented ones, `"sandbox": true`;
    real payments never have it."""
    if sandbox:
        body["sandbox"] = True  # additive, last: the documented keys keep their order
    return body
