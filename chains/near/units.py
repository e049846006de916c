"""Amounts on NEAR: integers of yoctoNEAR (10^-24 NEAR) as the chain counts them, and the Decimal of NEAR that
Kassa keeps, to 18 places (its amount columns). No float anywhere.

Reading a chain amount rounds DOWN to 18 places (a deposit is never credited a fraction of a yocto-scale
dust it did not bring in full); sending one is exact (an amount of Kassa's is whole yocto by construction).
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Context, Decimal, Inexact

from core.assets import get_asset

NEAR_DECIMALS = 24
YOCTO_PER_NEAR = 10**NEAR_DECIMALS
MAX_YOCTO = 2**128 - 1  # a balance is a u128
_EXACT = Context(prec=80, traps=[Inexact])


def from_yocto(yocto: int, rounding: str = ROUND_DOWN) -> Decimal:
    """`yocto` as NEAR to Kassa's places (18): rounded DOWN (what arrived or is held is never over-stated),
    or UP where asked (a fee is never under-stated)."""
    if isinstance(yocto, bool) or not isinstance(yocto, int):
        raise TypeError(f"an amount in yoctoNEAR is an int, not {type(yocto).__name__}")
    exact = Decimal(yocto).scaleb(-NEAR_DECIMALS, context=_EXACT)
    places = Decimal(1).scaleb(-get_asset("near").amount_decimals)
    return exact.quantize(places, rounding=rounding, context=Context(prec=80))  # rounding is the point


def to_yocto(amount: Decimal) -> int:
    """`amount` of NEAR in yoctoNEAR; ValueError when finer than a yocto (never rounded), negative, or more
    than a u128 holds."""
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise ValueError(f"an amount is a finite Decimal, not {amount!r}")
    yocto = amount.scaleb(NEAR_DECIMALS, context=_EXACT)
    if yocto != yocto.to_integral_value():
        raise ValueError(f"{amount} NEAR has more than {NEAR_DECIMALS} decimal places")
    if not 0 <= yocto <= MAX_YOCTO:
        raise ValueError(f"{amount} NEAR is not an amount of yoctoNEAR (0 to 2^128 - 1)")
    return int(yocto)
