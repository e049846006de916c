"""`MoneyField`: an exact decimal column on every database, ordered and compared as numbers on every one.

PostgreSQL stores `numeric(36, 18)` exactly. SQLite gives a DECIMAL column NUMERIC affinity, which keeps
only 15 significant digits (an ETH amount in wei precision would be rounded), so there the value is stored
as text in an order-preserving encoding: byte order is numeric order, so `order_by`, `Min`/`Max`,
`amount__gt=...`, `__in`, `__range` and comparisons between two money columns are correct in SQL.

- A value >= 0 is written with 18 integer and 18 fractional digits: 12.5 is
  `000000000000000012.500000000000000000` (SQLite's CAST still reads it as 12.5).
- A value < 0 is `-` followed by the complement 10^18 - |value| in the same layout, so a larger magnitude
  sorts earlier and every negative sorts before every non-negative (`-` < `0`); its CAST is negative, so
  the CHECK constraints (`money_check`) see the right sign.

Sums: SQL `SUM` over the text would be inexact, so use `MoneySum`, which is `SUM` on PostgreSQL and an
exact Python aggregate on SQLite (registered on each connection by `register_sqlite_functions`). Values
written before this encoding (plain decimal text) are still read correctly.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

from django.db import models
from django.db.models import Q
from django.db.models.functions import Cast
from django.db.models.lookups import GreaterThan, GreaterThanOrEqual

MAX_DIGITS = 36
DECIMAL_PLACES = 18
_SCALE = 10**DECIMAL_PLACES
_SPAN = 10**MAX_DIGITS  # scaled magnitudes are below this
_SQLITE_SUM = "kassa_money_sum"


def encode_sortable(value: Decimal) -> str:
    """The SQLite text of a money value (at most 18 integer and 18 fractional digits)."""
    with localcontext() as context:
        context.prec = MAX_DIGITS + 4
        scaled = value.scaleb(DECIMAL_PLACES)
        if scaled != scaled.to_integral_value():
            raise ValueError(f"{value} has more than {DECIMAL_PLACES} decimal places")
        number = int(scaled)
    if abs(number) >= _SPAN:
        raise ValueError(f"{value} has more than {MAX_DIGITS - DECIMAL_PLACES} integer digits")
    if number >= 0:
        return _layout(number)
    return "-" + _layout(_SPAN - (-number))


def decode_sortable(text: str) -> Decimal:
    """The money value of a stored text: the sortable encoding, or plain decimal text written earlier."""
    if len(text) == MAX_DIGITS + 2 and text[0] == "-" and text[DECIMAL_PLACES + 1] == ".":
        return _scaled(_SPAN - int(text[1:].replace(".", ""))).copy_negate()  # exact: no context rounding
    if len(text) == MAX_DIGITS + 1 and text[DECIMAL_PLACES] == "." and text[0].isdigit():
        return _scaled(int(text.replace(".", "")))
    return Decimal(text)  # a value stored as plain text before this encoding


def _layout(number: int) -> str:
    digits = f"{number:0{MAX_DIGITS}d}"
    return f"{digits[:-DECIMAL_PLACES]}.{digits[-DECIMAL_PLACES:]}"


def _scaled(number: int) -> Decimal:
    """number / 10^18 exactly, without trailing zeros beyond what the value needs."""
    with localcontext() as context:
        context.prec = MAX_DIGITS + 4  # scaleb rounds to the context's precision: 36 digits must fit
        value = Decimal(number).scaleb(-DECIMAL_PLACES)
    if value.is_zero():
        return Decimal(0)
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # a finite value
    while exponent < 0 and digits and digits[-1] == 0:  # strip trailing zeros exactly (no rounding)
        digits, exponent = digits[:-1], exponent + 1
    return Decimal((sign, digits, exponent))


class MoneyField(models.DecimalField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_digits", MAX_DIGITS)
        kwargs.setdefault("decimal_places", DECIMAL_PLACES)
        super().__init__(*args, **kwargs)

    def get_internal_type(self) -> str:
        # Not "DecimalField": SQLite's backend would run every value through its 15-digit float converter.
        return "MoneyField"

    def db_type(self, connection: Any) -> str:
        if connection.vendor == "sqlite":
            return "text"
        return f"numeric({self.max_digits}, {self.decimal_places})"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor != "sqlite":
            return super().get_db_prep_value(value, connection, prepared)
        if not prepared:
            value = self.get_prep_value(value)
        if value is None or hasattr(value, "as_sql"):
            return value
        return encode_sortable(self.to_python(value))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Decimal | None:
        if value is None or isinstance(value, Decimal):
            return value
        if isinstance(value, float | int):
            # Only SQL arithmetic on SQLite (SUM, a - b) yields numbers: refuse, never hand out a rounding.
            raise TypeError("money computed in SQL on SQLite is inexact; use MoneySum or compute in Python")
        return decode_sortable(str(value))


class MoneySum(models.Aggregate):
    """The exact sum of a money column (None over no rows), on PostgreSQL and on SQLite."""

    function = "SUM"
    name = "MoneySum"

    def __init__(self, expression: Any, **extra: Any) -> None:
        super().__init__(expression, output_field=MoneyField(), **extra)

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return self.as_sql(compiler, connection, function=_SQLITE_SUM, **extra_context)


class _ExactSum:
    """SQLite aggregate behind MoneySum: adds the decoded Decimals, answers the encoded text."""

    def __init__(self) -> None:
        self.total: Decimal | None = None

    def step(self, value: str | None) -> None:
        if value is not None:
            with localcontext() as context:
                context.prec = MAX_DIGITS + 4
                self.total = decode_sortable(value) + (self.total or Decimal(0))

    def finalize(self) -> str | None:
        return None if self.total is None else encode_sortable(self.total)


def register_sqlite_functions(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created: give each SQLite connection the exact money aggregate."""
    if connection.vendor == "sqlite":
        connection.connection.create_aggregate(_SQLITE_SUM, 1, _ExactSum)


def _cast(field: str) -> Cast:
    return Cast(field, models.DecimalField(max_digits=MAX_DIGITS, decimal_places=DECIMAL_PLACES))


def money_check(field: str, *, strictly_positive: bool = False) -> Q:
    """`field >= 0` (or `> 0`) compared as numbers on every database (SQLite holds the text)."""
    lookup = GreaterThan if strictly_positive else GreaterThanOrEqual
    return Q(lookup(_cast(field), 0))
