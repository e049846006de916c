"""Money helpers: `Decimal` only, and every rounding names its direction (docs/decisions.md)."""

from __future__ import annotations

import decimal
import re
from collections.abc import Iterable
from decimal import Decimal

MAX_DIGITS = 36  # the amount columns are DecimalField(max_digits=36, decimal_places=18)
MAX_DECIMALS = 18
MAX_INTEGER_DIGITS = MAX_DIGITS - MAX_DECIMALS
# The text helpers refuse exponents past this: "1E+999999999" is a valid Decimal but a gigabyte written out.
_TEXT_EXPONENT_LIMIT = 100

# 80 digits: the product of two 36-digit column values (72 digits) is still exact before the named rounding;
# the widest exponent range so a hostile "1E-999999999" is refused by our checks, not by a context trap.
MONEY_CONTEXT = decimal.Context(
    prec=80,
    rounding=decimal.ROUND_HALF_EVEN,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
)

_ROUNDINGS = frozenset(
    {
        decimal.ROUND_UP,
        decimal.ROUND_DOWN,
        decimal.ROUND_CEILING,
        decimal.ROUND_FLOOR,
        decimal.ROUND_HALF_UP,
        decimal.ROUND_HALF_DOWN,
        decimal.ROUND_HALF_EVEN,
        decimal.ROUND_05UP,
    }
)

# Decimal() alone also takes "1_000", "inf", non-ASCII digits and "nan"; a money string is plainer than that.
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# The wire format of a money string: plain decimal notation, e.g. "10", "-0.5"; no "+", exponent or bare ".".
_WIRE_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


class InvalidAmount(ValueError):
    """A value that is not a finite amount, or does not fit the places or digits allowed."""

    code = "invalid"

    def __init__(self, message: str = "", code: str | None = None) -> None:
        super().__init__(message)
        if code:
            self.code = code


class NotAnAmountType(InvalidAmount, TypeError):
    """A float, bool or other non-money type. Also a TypeError, yet still maps to a 400 like bad input."""


def to_decimal(value: Decimal | int | str) -> Decimal:
    """Exact conversion of a Decimal, int or numeric string; floats never get in."""
    if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
        raise NotAnAmountType(
            f"An amount must be a Decimal, int or numeric string, not {type(value).__name__}."
        )
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, str):
        text = value.strip()
        if not _NUMBER_TEXT.fullmatch(text):
            raise InvalidAmount("An amount must be a finite number.")
        value = Decimal(text)
    if not value.is_finite():
        raise InvalidAmount("An amount must be a finite number.")
    return value


def wire_decimal(value: object) -> Decimal:
    """A money value as it arrives on the wire (JSON number, numeric string) or from a form, exactly.

    Stricter than `to_decimal`: a string must be plain ASCII decimal notation as written ("10", "-0.5"), so
    surrounding spaces, "1_000", non-ASCII digits (Arabic-Indic, fullwidth), "+1", "1e2", ".5" and
    "Infinity" are refused. A JSON number may carry an exponent (the parser reads it exactly), but not one
    too large to write out ("1E+999999999" is a valid Decimal but a gigabyte of digits).
    """
    if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
        raise NotAnAmountType("Must be a number or a numeric string.")
    if isinstance(value, str):
        if not _WIRE_TEXT.fullmatch(value):
            raise InvalidAmount("Must be a plain decimal number in the ASCII digits 0-9, e.g. 10.5.")
        value = Decimal(value)
    elif isinstance(value, int):
        value = Decimal(value)
    if not value.is_finite():
        raise InvalidAmount("Must be a finite number.")
    if not value.is_zero() and abs(value.adjusted()) > _TEXT_EXPONENT_LIMIT:
        raise InvalidAmount("The number is too large or too small.")
    return value


def amount_input(value: object, *, allow_zero: bool = False) -> Decimal:
    """An amount as a client writes it (JSON number, numeric string, form text), for the API and the pages
    alike: exact, within the amount columns, and > 0 (>= 0 with `allow_zero`); InvalidAmount with the code
    and message of the rule it breaks. The asset's own decimals and minimum are the services' checks."""
    amount = wire_decimal(value)
    if decimal_places(amount) > MAX_DECIMALS:
        message = f"Ensure that there are no more than {MAX_DECIMALS} decimal places."
        raise InvalidAmount(message, code="max_decimal_places")
    if _integer_digits(amount) > MAX_INTEGER_DIGITS:
        message = f"Ensure that there are no more than {MAX_INTEGER_DIGITS} digits before the decimal point."
        raise InvalidAmount(message, code="max_whole_digits")
    if allow_zero and amount < 0:
        raise InvalidAmount("Ensure this value is greater than or equal to 0.", code="min_value")
    if not allow_zero and amount <= 0:
        raise InvalidAmount("Must be greater than 0.")
    return amount


def _require_finite(value: Decimal) -> None:
    if not isinstance(value, Decimal) or isinstance(value, bool):
        raise NotAnAmountType(f"Expected a Decimal, not {type(value).__name__}.")
    if not value.is_finite():
        raise InvalidAmount("An amount must be a finite number.")


def _require_decimals(decimals: int) -> None:
    if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
        raise ValueError(f"decimals must be a non-negative int, not {decimals!r}.")


def decimal_places(value: Decimal) -> int:
    """Significant fractional digits: trailing zeros do not count."""
    _require_finite(value)
    if value.is_zero():
        return 0
    _, _, exponent = _stripped(value)
    return max(0, -exponent)


def _stripped(value: Decimal) -> tuple[int, str, int]:
    """(sign, coefficient digits, exponent) of a non-zero finite value, trailing zeros moved to the exponent.

    Done by hand: Decimal.normalize() would round a coefficient longer than the context precision.
    """
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite, so not "n"/"N"/"F"
    text = "".join(map(str, digits))
    coefficient = text.rstrip("0")
    return sign, coefficient, exponent + len(text) - len(coefficient)


def _integer_digits(value: Decimal) -> int:
    """Digits left of the point (0 for |value| < 1); computed without building the integer of a huge value."""
    if value.is_zero():
        return 0
    return max(0, value.adjusted() + 1)


def check_places(value: Decimal, *, decimals: int) -> None:
    """Refuse rather than round: extra decimals in input are a 400, never a silent change."""
    _require_decimals(decimals)
    if decimal_places(value) > decimals:
        raise InvalidAmount(f"At most {decimals} decimal places are allowed.")


def check_range(value: Decimal) -> None:
    """Refuse a value whose integer part does not fit the DecimalField(36, 18) amount columns."""
    _require_finite(value)
    if _integer_digits(value) > MAX_INTEGER_DIGITS:
        raise InvalidAmount(f"At most {MAX_INTEGER_DIGITS} digits before the decimal point are allowed.")


def quantize(value: Decimal, *, decimals: int, rounding: str) -> Decimal:
    """Round to `decimals` places in the named direction; the result always fits the amount columns."""
    _require_finite(value)
    _require_decimals(decimals)
    if rounding not in _ROUNDINGS:
        raise ValueError(f"Unknown rounding {rounding!r}; name one of the decimal.ROUND_* constants.")
    # Checked first: a huge value would need more digits than the context holds, and quantize would trap.
    check_range(value)
    with decimal.localcontext(MONEY_CONTEXT):
        result = value.quantize(Decimal(1).scaleb(-decimals), rounding=rounding)
    # Rounding up can carry into one more integer digit (999...9.995 -> 1000...0.00).
    if _integer_digits(result) > MAX_INTEGER_DIGITS or len(result.as_tuple().digits) > MAX_DIGITS:
        raise InvalidAmount(f"The amount does not fit in {MAX_DIGITS} digits with {decimals} decimal places.")
    if result.is_zero():
        return result.copy_abs()  # -0.00 would reach the wire as "-0.00"
    return result


def _require_writable(value: Decimal) -> None:
    _require_finite(value)
    if not value.is_zero() and abs(value.adjusted()) > _TEXT_EXPONENT_LIMIT:
        raise InvalidAmount("The amount is too large or too small to write out.")


def format_amount(value: Decimal, *, decimals: int) -> str:
    """Fixed-point text with exactly `decimals` places, e.g. "1.00"; the caller rounds first, naming how."""
    _require_writable(value)
    check_places(value, decimals=decimals)
    if value.is_zero():
        value = Decimal(0)
    return f"{value:.{decimals}f}"


def number_text(value: Decimal) -> str:
    """The JSON number text of a Decimal: no exponent, no trailing zeros, no float on the way."""
    _require_writable(value)
    if value.is_zero():
        return "0"
    sign, coefficient, exponent = _stripped(value)
    text = f"{Decimal(f'{coefficient}E{exponent}'):f}"
    return f"-{text}" if sign else text


def exact_sum(values: Iterable[Decimal]) -> Decimal:
    """Sum money in Python with the money context (SQL SUM is inexact on SQLite; see core.fields)."""
    with decimal.localcontext(MONEY_CONTEXT):
        return sum(values, Decimal(0))
