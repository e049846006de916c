"""Compact JSON in which Decimals are raw numbers (`{"amount":10.5}`) and floats never appear."""

from __future__ import annotations

import json
import re
import secrets
from decimal import Decimal
from itertools import accumulate
from typing import Any

from core.money import number_text

# One compiled pattern for every call (a pattern with the nonce in it would be compiled anew each time);
# a match counts only when its nonce is this call's.
_MARKER = re.compile(r'"([0-9a-f]{32}):(\d+)"')


def dumps(obj: Any) -> str:
    """Compact, key order kept, non-ASCII kept; a Decimal is written as its exact number text.

    The stdlib encoder can only write a Decimal as a float or a string, so each Decimal becomes a quoted
    marker (its `default` hook, called for Decimals only) that is swapped for the number text afterwards.
    The marker carries a fresh random nonce, so no string in the payload can be mistaken for one. Floats are
    refused before encoding: the encoder would write them without asking.
    """
    _refuse_floats(obj)
    numbers: list[str] = []
    nonce = ""

    def default(value: Any) -> str:
        nonlocal nonce
        if not isinstance(value, Decimal):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        nonce = nonce or secrets.token_hex(16)
        numbers.append(number_text(value))
        return f"{nonce}:{len(numbers) - 1}"

    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=default)
    if not numbers:
        return text
    return _MARKER.sub(
        lambda match: numbers[int(match.group(2))] if match.group(1) == nonce else match.group(0), text
    )


# Values a walk never needs to look into or at again: exactly these types (a subclass is looked at).
_LEAVES = frozenset({str, int, bool, type(None), Decimal})


def _refuse_floats(obj: Any) -> None:
    """TypeError for a float anywhere in `obj`, or a float or Decimal as an object key. Iterative: no
    recursion, and no copy of the value (a walk that rebuilt it cost more than the encoding). Plain strings,
    numbers and Decimals are skipped by their exact type, without a call: an invoice's answer is walked in
    9 µs instead of 29."""
    stack = [obj]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict or (kind is not list and kind is not tuple and isinstance(node, dict)):
            for key in node:
                if type(key) is not str and isinstance(key, float | Decimal):
                    raise TypeError("JSON object keys must not be floats or Decimals.")
            children: Any = node.values()
        elif kind is list or kind is tuple or isinstance(node, list | tuple):
            children = node
        elif isinstance(node, float):
            raise TypeError("A float must never reach money JSON; use Decimal.")
        else:
            continue
        stack.extend(child for child in children if type(child) not in _LEAVES)


# Deeper input is refused: no request of the API nests past a handful of levels, and every recursive walk
# of a parsed body (serializers, error flattening, dumps) would otherwise meet Python's recursion limit.
MAX_DEPTH = 64


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number.")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key[:60]!r} appears twice in one object.")
            seen.add(key)
    return result


def _check_depth(value: Any) -> None:
    """Iterative, so a deep value is measured without recursion."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"values are nested deeper than {MAX_DEPTH} levels.")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


# A string literal with its escapes: removed before a nesting scan, so no bracket inside a string counts.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def refuse_deep(text: str | bytes, max_depth: int = MAX_DEPTH) -> None:
    """ValueError when `text` opens more than `max_depth` arrays or objects inside one another, found
    without parsing and without recursion: a parser (Python's json included, in C) recurses once per level,
    and a body of a few hundred kilobytes of `[` would overflow the C stack of a process whose recursion
    limit some library raised (core.runtime.pin_recursion_limit). Every step runs in C (regex, translate,
    accumulate); text with fewer brackets than the limit is not scanned."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if brackets and max(accumulate(map(_STEP.__getitem__, brackets))) > max_depth:
        raise ValueError(f"values are nested deeper than {max_depth} levels.")


def loads(text: str | bytes) -> Any:
    """Parse JSON strictly: every fractional number an exact Decimal, NaN and Infinity refused, a key twice
    in one object refused (no silent "last wins"), nesting at most MAX_DEPTH levels (refused before the
    parser recurses); all as ValueError."""
    refuse_deep(text)
    try:
        value = json.loads(
            text, parse_float=Decimal, parse_constant=_refuse_constant, object_pairs_hook=_refuse_duplicates
        )
    except RecursionError as exc:
        raise ValueError(f"values are nested deeper than {MAX_DEPTH} levels.") from exc
    _check_depth(value)
    return value
