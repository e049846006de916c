"""Amounts on TON: integers of nanotons (9 decimals; a jetton's own `decimals`), and the exact Decimal a
person reads. No float anywhere."""

from __future__ import annotations

from decimal import Context, Decimal, Inexact

TON_DECIMALS = 9
# A coin amount is a VarUInteger 16 (at most 2**120 - 1): enough digits for it at any scale, and an error
# rather than a rounding past them.
_EXACT = Context(prec=100, traps=[Inexact])
MAX_NANOTONS = 2**120 - 1


def from_nanotons(units: int, decimals: int = TON_DECIMALS) -> Decimal:
    """`units` of the smallest unit as an exact Decimal of the coin (nanotons -> TON by default)."""
    if isinstance(units, bool) or not isinstance(units, int):
        raise TypeError(f"an amount in units is an int, not {type(units).__name__}")
    return Decimal(units).scaleb(-decimals, context=_EXACT)


def to_nanotons(amount: Decimal, decimals: int = TON_DECIMALS) -> int:
    """`amount` in the smallest unit (TON -> nanotons by default); ValueError if it has more decimal places
    than the unit has, is negative, or is more than a coin amount can hold: never a rounded amount."""
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise ValueError(f"an amount is a finite Decimal, not {amount!r}")
    units = amount.scaleb(decimals, context=_EXACT)
    if units != units.to_integral_value():
        raise ValueError(f"{amount} has more than {decimals} decimal places")
    if units < 0:
        raise ValueError(f"{amount} is negative")
    if units > MAX_NANOTONS:
        raise ValueError(f"{amount} is more than a TON amount can hold")
    return int(units)


def parse_nanotons(text: object, what: str = "amount") -> int:
    """A toncenter amount (a decimal string of nanotons, or an int) as an int; ValueError otherwise."""
    if isinstance(text, bool):
        raise ValueError(f"{what}: not an amount")
    if isinstance(text, int):
        value = text
    elif isinstance(text, str) and text.isascii() and text.lstrip("-").isdigit() and len(text) <= 80:
        value = int(text)
    else:
        raise ValueError(f"{what}: not an amount ({text!r})")
    return value
