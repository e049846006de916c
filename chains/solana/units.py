"""Amounts on Solana: integers of lamports (10^-9 SOL) as the chain counts them, and the exact Decimal of SOL
a person reads. No float anywhere."""

from __future__ import annotations

from decimal import Context, Decimal, Inexact

SOL_DECIMALS = 9
LAMPORTS_PER_SOL = 10**SOL_DECIMALS
MAX_LAMPORTS = 2**64 - 1  # a balance is a u64
# Enough digits for any u64 amount at any scale, and an error rather than a rounding past them.
_EXACT = Context(prec=60, traps=[Inexact])


def from_lamports(lamports: int) -> Decimal:
    """`lamports` as an exact Decimal of SOL."""
    if isinstance(lamports, bool) or not isinstance(lamports, int):
        raise TypeError(f"an amount in lamports is an int, not {type(lamports).__name__}")
    return Decimal(lamports).scaleb(-SOL_DECIMALS, context=_EXACT)


def to_lamports(amount: Decimal) -> int:
    """`amount` of SOL in lamports; ValueError if it has more than 9 decimal places (never rounded), is
    negative, or is more than a u64 holds."""
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise ValueError(f"an amount is a finite Decimal, not {amount!r}")
    lamports = amount.scaleb(SOL_DECIMALS, context=_EXACT)
    if lamports != lamports.to_integral_value():
        raise ValueError(f"{amount} SOL has more than {SOL_DECIMALS} decimal places")
    if not 0 <= lamports <= MAX_LAMPORTS:
        raise ValueError(f"{amount} SOL is not an amount of lamports (0 to 2^64 - 1)")
    return int(lamports)
