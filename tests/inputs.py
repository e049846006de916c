"""The direct input checks of the busiest writes (`invoice_create_input`, `withdraw_input`) held to the
serializers they stand in for: each answer is ("ok", the values made plain) or ("error", the detail of the
ValidationError)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.serializers import Serializer


def by_serializer(serializer_class: type[Serializer], data: Any) -> tuple[str, Any]:
    serializer = serializer_class(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        return "error", exc.detail
    return "ok", plain(serializer.validated_data)


def by_check(check: Callable[[Any], Any], data: Any) -> tuple[str, Any]:
    try:
        return "ok", plain(check(data))
    except ValidationError as exc:
        return "error", exc.detail


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
