from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chains.ton.units import MAX_NANOTONS, from_nanotons, parse_nanotons, to_nanotons


def test_nanotons_and_ton_exactly() -> None:
    assert from_nanotons(1) == Decimal("0.000000001")
    assert from_nanotons(1_234_567_891) == Decimal("1.234567891")
    assert to_nanotons(Decimal("1.234567891")) == 1_234_567_891
    assert to_nanotons(Decimal("5")) == 5_000_000_000
    assert to_nanotons(Decimal("0.10")) == 100_000_000
    assert str(from_nanotons(MAX_NANOTONS)) == "1329227995784915872903807060.280344575"
    assert from_nanotons(7, decimals=6) == Decimal("0.000007")  # a jetton of 6 decimals


@pytest.mark.parametrize(
    "amount", [Decimal("0.0000000001"), Decimal("-1"), Decimal("NaN"), Decimal("Infinity"), Decimal(2**120)]
)
def test_amounts_that_are_not_nanotons_are_refused(amount: Decimal) -> None:
    with pytest.raises(ValueError):
        to_nanotons(amount)


def test_only_ints_are_units() -> None:
    with pytest.raises(TypeError):
        from_nanotons(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        from_nanotons(True)


def test_toncenter_amounts() -> None:
    assert parse_nanotons("1234567891") == 1_234_567_891
    assert parse_nanotons(0) == 0
    for bad in ("1.5", "", "0x10", "1e9", True, None, "١٢"):
        with pytest.raises(ValueError):
            parse_nanotons(bad)


@given(st.integers(min_value=0, max_value=MAX_NANOTONS))
def test_round_trip(units: int) -> None:
    assert to_nanotons(from_nanotons(units)) == units
