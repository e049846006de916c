"""`MoneyField`: an exact decimal column on every database.

PostgreSQL stores `numeric(36, 18)` exactly. SQLite gives a DECIMAL column NUMERIC affinity, which keeps
only 15 significant digits (an ETH amount in wei precision would be rounded), so there the value is stored
as its decimal text and read back with `Decimal(text)`. Consequences on SQLite, kept out of the code paths
that matter: SQL `SUM` over money is inexact (sum in Python: `payments.money.exact_sum`), and SQL comparisons
between money columns compare text (compare in Python; CHECK constraints cast, see `money_check`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import models
from django.db.models import Q
from django.db.models.functions import Cast
from django.db.models.lookups import GreaterThan, GreaterThanOrEqual

MAX_DIGITS = 36
DECIMAL_PLACES = 18


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

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Decimal | None:
        if value is None or isinstance(value, Decimal):
            return value
        if isinstance(value, float):
            # Only SQL arithmetic on SQLite (SUM, a - b) yields floats: refuse, never hand out a rounding.
            raise TypeError("money computed in SQL on SQLite is inexact; compute it in Python")
        return Decimal(str(value))


def _cast(field: str) -> Cast:
    return Cast(field, models.DecimalField(max_digits=MAX_DIGITS, decimal_places=DECIMAL_PLACES))


def money_check(field: str, *, strictly_positive: bool = False) -> Q:
    """`field >= 0` (or `> 0`) compared as numbers on every database (SQLite holds the text)."""
    lookup = GreaterThan if strictly_positive else GreaterThanOrEqual
    return Q(lookup(_cast(field), 0))
