from decimal import (
    ROUND_CEILING,
    ROUND_DOWN,
    ROUND_FLOOR,
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    ROUND_UP,
    Decimal,
)

import pytest

from core.assets import INVOICE_CURRENCIES
from core.money import (
    MAX_DECIMALS,
    MAX_DIGITS,
    MONEY_CONTEXT,
    InvalidAmount,
    check_places,
    check_range,
    decimal_places,
    format_amount,
    number_text,
    quantize,
    to_decimal,
)


def test_limits_match_the_amount_columns() -> None:
    assert (MAX_DIGITS, MAX_DECIMALS) == (36, 18)
    assert MONEY_CONTEXT.prec >= MAX_DIGITS * 2


# --- to_decimal -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10.50", Decimal("10.50")),
        ("  0.00012\n", Decimal("0.00012")),
        ("-3", Decimal("-3")),
        ("+7.1", Decimal("7.1")),
        ("1e2", Decimal("1E+2")),
        (".5", Decimal("0.5")),
        ("0.000000000000000001", Decimal("1E-18")),
        ("123456789012345678.123456789012345678", Decimal("123456789012345678.123456789012345678")),
        (7, Decimal(7)),
        (10**40, Decimal(10**40)),
        (Decimal("1.10"), Decimal("1.10")),
    ],
)
def test_to_decimal_converts_exactly(value: Decimal | int | str, expected: Decimal) -> None:
    result = to_decimal(value)

    assert result == expected
    assert str(result) == str(expected)  # exact: trailing zeros and exponent kept, no rounding


@pytest.mark.parametrize("value", [0.1, 1.0, float("nan"), float("inf"), True, False, None, [1], {"a": 1}])
def test_to_decimal_refuses_floats_bools_and_other_types(value: object) -> None:
    with pytest.raises(TypeError):
        to_decimal(value)  # type: ignore[arg-type]
    with pytest.raises(InvalidAmount):  # also a 400 when it comes from a request body
        to_decimal(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "abc",
        "1,5",
        "1.2.3",
        "1_000",
        "NaN",
        "nan",
        "sNaN",
        "Infinity",
        "-Infinity",
        "inf",
        "١٢",
        "0x10",
        "1e",
        "--1",
        Decimal("NaN"),
        Decimal("sNaN"),
        Decimal("Infinity"),
        Decimal("-Infinity"),
    ],
)
def test_to_decimal_refuses_non_finite_and_non_numeric(value: str | Decimal) -> None:
    with pytest.raises(InvalidAmount):
        to_decimal(value)


# --- quantize ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "decimals", "rounding", "expected"),
    [
        ("1.005", 2, ROUND_HALF_UP, "1.01"),
        ("1.004", 2, ROUND_HALF_UP, "1.00"),
        ("-1.005", 2, ROUND_HALF_UP, "-1.01"),
        ("1.005", 2, ROUND_HALF_EVEN, "1.00"),
        ("1.001", 2, ROUND_UP, "1.01"),
        ("1.009", 2, ROUND_DOWN, "1.00"),
        ("-1.001", 2, ROUND_UP, "-1.01"),
        ("-1.001", 2, ROUND_CEILING, "-1.00"),
        ("-1.001", 2, ROUND_FLOOR, "-1.01"),
        ("1.001", 2, ROUND_CEILING, "1.01"),
        ("0.00005", 4, ROUND_HALF_UP, "0.0001"),
        ("0.00004999", 4, ROUND_HALF_UP, "0.0000"),
        ("12.3456789", 6, ROUND_UP, "12.345679"),
        ("12.3456789", 6, ROUND_DOWN, "12.345678"),
        ("0.000000011", 8, ROUND_UP, "0.00000002"),
        ("0.000000019", 8, ROUND_DOWN, "0.00000001"),
        ("0.000000015", 8, ROUND_HALF_UP, "0.00000002"),
        ("1E-30", 8, ROUND_UP, "0.00000001"),
        ("1E-30", 8, ROUND_DOWN, "0.00000000"),
        ("5", 2, ROUND_UP, "5.00"),
        ("1E+2", 0, ROUND_DOWN, "100"),
        ("0.1234567890123456789", 18, ROUND_UP, "0.123456789012345679"),
        ("999999999999999999.999", 2, ROUND_DOWN, "999999999999999999.99"),
    ],
)
def test_quantize_rounds_in_the_named_direction(
    value: str, decimals: int, rounding: str, expected: str
) -> None:
    result = quantize(Decimal(value), decimals=decimals, rounding=rounding)

    assert str(result) == str(Decimal(expected))
    assert result.as_tuple().exponent == -decimals


@pytest.mark.parametrize(("currency", "decimals"), sorted(INVOICE_CURRENCIES.items()))
def test_quantize_half_up_at_each_invoice_currency_decimals(currency: str, decimals: int) -> None:
    half = Decimal(5).scaleb(-(decimals + 1))  # exactly half a unit of the last place
    below_half = Decimal(49).scaleb(-(decimals + 2))
    unit = Decimal(1).scaleb(-decimals)

    assert quantize(Decimal(1) + half, decimals=decimals, rounding=ROUND_HALF_UP) == Decimal(1) + unit
    assert quantize(Decimal(1) + below_half, decimals=decimals, rounding=ROUND_HALF_UP) == Decimal(1)
    assert quantize(Decimal(1) + below_half, decimals=decimals, rounding=ROUND_UP) == Decimal(1) + unit
    assert quantize(Decimal(1) + half, decimals=decimals, rounding=ROUND_DOWN) == Decimal(1)


def test_quantize_never_returns_negative_zero() -> None:
    result = quantize(Decimal("-0.001"), decimals=2, rounding=ROUND_DOWN)

    assert result == 0
    assert not result.is_signed()
    assert format_amount(result, decimals=2) == "0.00"


@pytest.mark.parametrize(
    ("value", "decimals", "rounding"),
    [
        ("1E+30", 2, ROUND_DOWN),
        ("1E+999999999", 8, ROUND_DOWN),
        ("1000000000000000000", 0, ROUND_DOWN),  # 19 integer digits: the column holds 18
        ("999999999999999999.995", 2, ROUND_UP),  # the carry makes it 19 integer digits
        ("1234567890123.5", 24, ROUND_DOWN),  # 13 + 24 > 36 digits
    ],
)
def test_quantize_refuses_what_the_columns_cannot_hold(value: str, decimals: int, rounding: str) -> None:
    with pytest.raises(InvalidAmount):
        quantize(Decimal(value), decimals=decimals, rounding=rounding)


def test_quantize_handles_tiny_exponents_without_trapping() -> None:
    assert quantize(Decimal("1E-999999999"), decimals=8, rounding=ROUND_UP) == Decimal("0.00000001")
    assert quantize(Decimal("0E+999999999"), decimals=2, rounding=ROUND_DOWN) == Decimal("0.00")


@pytest.mark.parametrize(
    "value", [Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity"), Decimal("sNaN")]
)
def test_quantize_refuses_non_finite(value: Decimal) -> None:
    with pytest.raises(InvalidAmount):
        quantize(value, decimals=2, rounding=ROUND_UP)


def test_quantize_refuses_float() -> None:
    with pytest.raises(TypeError):
        quantize(1.005, decimals=2, rounding=ROUND_HALF_UP)  # type: ignore[arg-type]


def test_quantize_requires_a_known_rounding_keyword() -> None:
    with pytest.raises(ValueError, match="rounding"):
        quantize(Decimal("1.5"), decimals=0, rounding="ROUND_SIDEWAYS")
    with pytest.raises(TypeError):
        quantize(Decimal("1.5"), decimals=0)  # type: ignore[call-arg]


# --- places -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1.10", 1),
        ("100", 0),
        ("1E+2", 0),
        ("0", 0),
        ("0E-8", 0),
        ("-0.00", 0),
        ("0.00012", 5),
        ("0.000120", 5),
        ("-2.5", 1),
        ("1E-18", 18),
        ("1.000000000000000000000000001", 27),
        ("1E-999999999", 999999999),
        ("1" + "0" * 80 + "E-80", 0),  # a coefficient longer than the context precision is not rounded
    ],
)
def test_decimal_places_counts_significant_fractional_digits(value: str, expected: int) -> None:
    assert decimal_places(Decimal(value)) == expected


@pytest.mark.parametrize(
    ("value", "decimals"),
    [("1.23", 2), ("1.230000", 2), ("100", 0), ("1E+5", 0), ("0.00000001", 8), ("-0.5", 1)],
)
def test_check_places_accepts_up_to_the_limit(value: str, decimals: int) -> None:
    check_places(Decimal(value), decimals=decimals)


@pytest.mark.parametrize(
    ("value", "decimals"),
    [("1.234", 2), ("0.000000001", 8), ("0.5", 0), ("1E-19", 18), ("-1.0000001", 6), ("1E-999999999", 18)],
)
def test_check_places_refuses_extra_decimals_without_rounding(value: str, decimals: int) -> None:
    with pytest.raises(InvalidAmount, match=f"At most {decimals} decimal places"):
        check_places(Decimal(value), decimals=decimals)


def test_check_range_allows_18_integer_digits_only() -> None:
    check_range(Decimal("999999999999999999.999999999999999999"))
    check_range(Decimal("-999999999999999999"))

    with pytest.raises(InvalidAmount):
        check_range(Decimal("1000000000000000000"))
    with pytest.raises(InvalidAmount):
        check_range(Decimal("-1E+18"))


# --- text -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "decimals", "expected"),
    [
        ("1", 2, "1.00"),
        ("-3", 2, "-3.00"),
        ("0", 2, "0.00"),
        ("-0", 2, "0.00"),
        ("0E-8", 8, "0.00000000"),
        ("10.5", 2, "10.50"),
        ("1E+2", 2, "100.00"),
        ("1E+20", 0, "100000000000000000000"),
        ("0.00000002", 8, "0.00000002"),
        ("1.000", 2, "1.00"),  # trailing zeros beyond the places are not significant
        ("12.3456", 4, "12.3456"),
        ("5", 0, "5"),
    ],
)
def test_format_amount_writes_exactly_the_places(value: str, decimals: int, expected: str) -> None:
    assert format_amount(Decimal(value), decimals=decimals) == expected


@pytest.mark.parametrize(("value", "decimals"), [("1.005", 2), ("0.000000001", 8), ("0.5", 0)])
def test_format_amount_refuses_to_round_silently(value: str, decimals: int) -> None:
    with pytest.raises(InvalidAmount):
        format_amount(Decimal(value), decimals=decimals)


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("Infinity"), Decimal("1E+999999999")])
def test_format_amount_refuses_non_finite_and_absurd(value: Decimal) -> None:
    with pytest.raises(InvalidAmount):
        format_amount(value, decimals=2)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10.50", "10.5"),
        ("0.00012", "0.00012"),
        ("1E+2", "100"),
        ("0E-8", "0"),
        ("-0", "0"),
        ("-0.000", "0"),
        ("0E+5", "0"),
        ("1", "1"),
        ("-1.2300", "-1.23"),
        ("1E-18", "0.000000000000000001"),
        ("123456789012345678.123456789012345678", "123456789012345678.123456789012345678"),
        ("0.1", "0.1"),  # the float 0.1 would have written 0.1000000000000000055511151231257827...
        ("12345678901234567890.5", "12345678901234567890.5"),
        ("1" + "0" * 80 + "E-80", "1"),
    ],
)
def test_number_text_is_plain_exact_and_stripped(value: str, expected: str) -> None:
    assert number_text(Decimal(value)) == expected


@pytest.mark.parametrize(
    "value",
    [Decimal("NaN"), Decimal("sNaN"), Decimal("-Infinity"), Decimal("1E+999999999"), Decimal("1E-500")],
)
def test_number_text_refuses_non_finite_and_absurd(value: Decimal) -> None:
    with pytest.raises(InvalidAmount):
        number_text(value)


@pytest.mark.parametrize("func", [decimal_places, number_text, check_range])
def test_helpers_refuse_float(func: object) -> None:
    with pytest.raises(TypeError):
        func(0.5)  # type: ignore[operator]


def test_check_places_and_format_amount_refuse_float() -> None:
    with pytest.raises(TypeError):
        check_places(0.5, decimals=2)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        format_amount(0.5, decimals=2)  # type: ignore[arg-type]
