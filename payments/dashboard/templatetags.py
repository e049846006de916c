"""Template filters of the dashboard, loaded with `{% load dashboard %}` (TEMPLATES libraries setting)."""

from __future__ import annotations

import json
from decimal import ROUND_DOWN, Decimal
from typing import Any

from django import template
from django.http import QueryDict

from core.assets import price_decimals
from core.errors import DomainError
from core.money import InvalidAmount, format_amount, number_text

register = template.Library()


@register.filter
def amount_down(value: Any, places: int = 8) -> str:
    """`amount`, cut to `places` decimals (ROUND_DOWN: a balance is never shown as more than it is)."""
    if isinstance(value, Decimal) and value.is_finite():
        value = value.quantize(Decimal(1).scaleb(-int(places)), rounding=ROUND_DOWN)
    return amount(value)


@register.filter
def amount(value: Any) -> str:
    """A Decimal as plain text, no exponent, no trailing zeros ("0.0015"); "—" for None."""
    if value is None or value == "":
        return "—"
    try:
        return number_text(value if isinstance(value, Decimal) else Decimal(str(value)))
    except (InvalidAmount, ArithmeticError, ValueError):
        return str(value)


@register.filter
def price(value: Any, currency: str) -> str:
    """An invoice amount with its currency's decimals ("100.00" usd, "0.0015" sol) (docs/api.md)."""
    try:
        return format_amount(value, decimals=price_decimals(currency))
    except (DomainError, InvalidAmount, ArithmeticError, TypeError):
        return amount(value)


@register.filter
def signed_amount(value: Any) -> str:
    """Like `amount`, with an explicit + for positive numbers (ledger deltas)."""
    text = amount(value)
    if isinstance(value, Decimal) and value > 0:
        return f"+{text}"
    return text


@register.filter
def pretty_json(value: str) -> str:
    try:
        return json.dumps(json.loads(value), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return value


@register.simple_tag(takes_context=True)
def page_query(context: dict[str, Any], after: str | None) -> str:
    """The current query string with the page position `after` replaced (None: the newest page): pagination
    keeps the filters."""
    request = context.get("request")
    query = request.GET.copy() if request is not None else QueryDict(mutable=True)
    query.pop("after", None)
    if after:
        query["after"] = after
    encoded = query.urlencode()
    if not encoded and request is not None:
        return str(request.path)  # the newest page without filters: the list's own address, no bare "?"
    return "?" + encoded
