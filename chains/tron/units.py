"""Amounts on TRON: integers of the smallest unit (sun for TRX: 6 decimals; a TRC-20 token's own
`decimals`), and the exact Decimal a person reads. No float anywhere."""

from __future__ import annotations

from decimal import Context, Decimal, Inexact

TRX_DECIMALS = 6
# Enough digits for any uint256 amount (78) at any scale, and an error rather than a rounding past them.
_EXACT = Context(prec=100, traps=[Inexact])


def from_units(units: int, decimals: int = TRX_DECIMALS) -> Decimal:
    """`units` of the smallest unit as an exact Decimal of the coin or token (sun -> TRX by default)."""
    if isinstance(units, bool) or not isinstance(units, int):
        raise TypeError(f"an amount in units is an int, not {type(units).__name__}")
    return Decimal(units).scaleb(-decimals, context=_EXACT)


def to_units(amount: Decimal, decimals: int = TRX_DECIMALS) -> int:
    """`amount` of the coin or token in its smallest unit (TRX -> sun by default); ValueError if it has
    more decimal places than the unit has, never a rounded amount."""
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise ValueError(f"an amount is a finite Decimal, not {amount!r}")
    units = amount.scaleb(decimals, context=_EXACT)
    if units != units.to_integral_value():
        raise ValueError(f"{amount} has more than {decimals} decimal places")
    return int(units)
