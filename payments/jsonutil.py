"""Compact JSON in which Decimals are raw numbers (`{"amount":10.5}`) and floats never appear."""

from __future__ import annotations

import json
import re
import secrets
from decimal import Decimal
from typing import Any

from payments.money import number_text

# One compiled pattern for every call (a pattern with the nonce in it would be compiled anew each time);
# a match counts only when its nonce is this call's.
_MARKER = re.compile(r'"([0-9a-f]{32}):(\d+)"')


def dumps(obj: Any) -> str:
    """Compact, key order kept, non-ASCII kept; a Decimal is written as its exact number text.

    The stdlib encoder can only write a Decimal as a float or a string, so each Decimal becomes a quoted
    marker that is swapped for the number text afterwards. The marker carries a fresh random nonce, so no
    string in the payload can be mistaken for one.
    """
    nonce = secrets.token_hex(16)
    numbers: list[str] = []

    def prepare(value: Any) -> Any:
        if isinstance(value, Decimal):
            numbers.append(number_text(value))
            return f"{nonce}:{len(numbers) - 1}"
        if isinstance(value, float):
            raise TypeError("A float must never reach money JSON; use Decimal.")
        if isinstance(value, dict):
            if any(isinstance(key, float | Decimal) for key in value):
                raise TypeError("JSON object keys must not be floats or Decimals.")
            return {key: prepare(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [prepare(item) for item in value]
        return value

    text = json.dumps(prepare(obj), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if not numbers:
        return text
    return _MARKER.sub(
        lambda match: numbers[int(match.group(2))] if match.group(1) == nonce else match.group(0), text
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number.")


def loads(text: str | bytes) -> Any:
    """Parse JSON with every fractional number as an exact Decimal; NaN and Infinity are refused."""
    return json.loads(text, parse_float=Decimal, parse_constant=_refuse_constant)
