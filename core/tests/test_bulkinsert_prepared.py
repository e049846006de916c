"""`core.bulkinsert._prepared` skips `get_db_prep_save` for values the call would return unchanged on
PostgreSQL: for every concrete field of every model, and values of every kind the hot paths write, it
returns exactly what the call returns (same value, same type), or makes the call. One difference is
allowed: Django wraps an int in psycopg's `Int2`/`Int4`/`Int8` (the parameter's type for server-side
binding); the shortcut keeps the plain int, which an integer column takes the same (the statements of
`insert_together` name their columns)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils.functional import lazy

from core.bulkinsert import _prepared
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.postgres

VALUES = [
    None,
    uuid.uuid4(),
    "text",
    "",
    WebhookEvent.Status.PENDING,  # a TextChoices member: a str subclass
    lazy(lambda: "lazy", str)(),  # a Promise, not a str: Django resolves it
    0,
    7,
    True,
    Decimal("1.500000000000000001"),
    Decimal("-0.0001"),
    Decimal("NaN"),
    Decimal("Infinity"),
    datetime(2026, 11, 26, 10, 0, tzinfo=UTC),
]


REFUSALS = (ValidationError, TypeError, ValueError, AttributeError, OverflowError)
PSYCOPG_INTS = {"Int2", "Int4", "Int8"}


def _fields():
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            yield pytest.param(field, id=f"{model._meta.label}.{field.name}")


@pytest.mark.parametrize("field", list(_fields()))
def test_the_shortcuts_return_what_the_field_would(field):
    for value in VALUES:
        try:
            expected = field.get_db_prep_save(value, connection)
        except REFUSALS:
            with pytest.raises(REFUSALS):
                _prepared(field, value, connection)
            continue
        got = _prepared(field, value, connection)
        if type(got) is int and type(expected).__name__ in PSYCOPG_INTS:
            assert got == int(expected), (value, got, expected)
            continue
        assert type(got) is type(expected), (value, got, expected)
        assert got == expected or repr(got) == repr(expected), (value, got, expected)  # Jsonb has no ==
