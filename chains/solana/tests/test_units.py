"""Lamports and SOL: exact both ways, never rounded, never a float."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chains.solana.units import LAMPORTS_PER_SOL, MAX_LAMPORTS, from_lamports, to_lamports


def test_lamports_and_sol() -> None:
    assert from_lamports(1) == Decimal("0.000000001")
    assert from_lamports(LAMPORTS_PER_SOL) == Decimal(1)
    assert from_lamports(MAX_LAMPORTS) == Decimal("18446744073.709551615")
    assert to_lamports(Decimal("0.000000001")) == 1
    assert to_lamports(Decimal("1.5")) == 1_500_000_000
    assert to_lamports(Decimal("18446744073.709551615")) == MAX_LAMPORTS


@pytest.mark.parametrize("amount", ["0.0000000001", "-1", "18446744073.709551616", "NaN", "Infinity"])
def test_what_is_not_lamports_is_refused(amount: str) -> None:
    with pytest.raises(ValueError):
        to_lamports(Decimal(amount))


@pytest.mark.parametrize("value", [1.5, True, "1", Decimal(1)])
def test_lamports_are_an_int(value: object) -> None:
    with pytest.raises(TypeError):
        from_lamports(value)  # type: ignore[arg-type]


def test_a_float_is_not_an_amount() -> None:
    with pytest.raises(ValueError):
        to_lamports(0.1)  # type: ignore[arg-type]


@given(st.integers(min_value=0, max_value=MAX_LAMPORTS))
def test_round_trip(lamports: int) -> None:
    assert to_lamports(from_lamports(lamports)) == lamports
