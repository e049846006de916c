"""The direct input checks of the busiest writes (a serializer's `direct_check`, run by
core.api.validation.validated) held to the serializers they stand in for: each answer is ("ok", the
values made plain) or ("error", the detail of the ValidationError)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.serializers import Serializer

from core.api.validation import validated


def by_serializer(serializer_class: type[Serializer], data: Any) -> tuple[str, Any]:
    serializer = serializer_class(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        return "error", exc.detail
    return "ok", plain(serializer.validated_data)


def by_validated(serializer_class: type[Serializer], data: Any) -> tuple[str, Any]:
    """The answer of `validated`: the direct check's when it vouches for `data`, else the serializer's."""
    try:
        return "ok", plain(validated(serializer_class, data))
    except ValidationError as exc:
        return "error", exc.detail


def serializer_runs(monkeypatch: Any, serializer_class: type[Serializer], *, allowed: bool) -> list[Any]:
    """Each input the serializer's own checks run on from now on; with `allowed` off, one fails the test."""
    runs: list[Any] = []
    real: Callable[..., Any] = serializer_class.run_validation

    def run_validation(self: Serializer, data: Any = None) -> Any:
        runs.append(data)
        if not allowed:
            raise AssertionError("the serializer ran")
        return real(self, data)

    monkeypatch.setattr(serializer_class, "run_validation", run_validation)
    return runs


def plain(value: Any) -> Any:
    """Dicts (with their key order) and lists as they compare; each value with its type, a Decimal with its
    exponent (4.5 and 4.50 differ on the wire)."""
    if isinstance(value, dict):
        return [(key, plain(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, Decimal):
        return ("decimal", value.as_tuple())
    return (type(value).__name__, value)
