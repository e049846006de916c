"""Keyset pagination: a page starts right after the last row of the page before, found through the list's
index, so the ten-thousandth page of a million rows costs what the first one costs (an OFFSET reads and
drops every row it skips, and a total count reads every matching row).

Every list served this way is ordered newest first by `(created_at, pk)` (`-created_at, -pk`, which its
`(company, -created_at)` index serves). A position is the last row's `(created_at, pk)`, written as an
opaque URL-safe text; it only says where a page starts, the list's own filters (the company above all)
still apply, so a position from anywhere else shows nothing it should not.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from django.core.exceptions import ValidationError
from django.db.models import Model, Q, QuerySet

M = TypeVar("M", bound=Model)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SEPARATOR = "_"


@dataclass(frozen=True)
class Position:
    created_at: datetime
    pk: Any


def position_text(row: Model) -> str:
    """The opaque position just after `row`: microseconds since the epoch and the primary key."""
    micros = (row.created_at - _EPOCH) // timedelta(microseconds=1)  # type: ignore[attr-defined]
    raw = f"{micros}{_SEPARATOR}{row.pk}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_position(text: str, model: type[Model]) -> Position | None:
    """The position `text` names, or None when it is not one `position_text` could have written."""
    if not text.isascii() or len(text) > 200:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        micros_text, pk_text = raw.split(_SEPARATOR, 1)
        if not (micros_text.isascii() and micros_text.isdigit()) or len(micros_text) > 17:
            return None
        created_at = _EPOCH + timedelta(microseconds=int(micros_text))
        pk_field = model._meta.pk
        assert pk_field is not None
        pk = pk_field.to_python(pk_text)
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError, ValidationError):
        return None
    return Position(created_at, pk)


def older_than(rows: QuerySet[M], position: Position) -> QuerySet[M]:
    """The rows after `position` in newest-first order. The first condition is implied by the second; it is
    there for the planner, which can start an index scan at a plain bound but not at an OR."""
    return rows.filter(created_at__lte=position.created_at).filter(
        Q(created_at__lt=position.created_at) | Q(created_at=position.created_at, pk__lt=position.pk)
    )


@dataclass
class KeysetPage(Generic[M]):
    """One page: its rows, the position of the next page (None on the last one), whether newer rows precede
    it."""

    object_list: list[M]
    next_position: str | None
    has_previous: bool

    def __iter__(self) -> Iterator[M]:
        return iter(self.object_list)

    @property
    def has_next(self) -> bool:
        return self.next_position is not None


def keyset_page(rows: QuerySet[M], *, after: Position | None, size: int) -> KeysetPage[M]:
    """`size` rows of `rows` (ordered newest first) after `after` (None: from the newest), reading one more
    row to know whether another page follows. No count, no offset."""
    window = rows if after is None else older_than(rows, after)
    found = list(window[: size + 1])
    has_next = len(found) > size
    found = found[:size]
    return KeysetPage(
        object_list=found,
        next_position=position_text(found[-1]) if has_next else None,
        has_previous=after is not None,
    )
