"""`bulk_insert`: Django's `bulk_create` for hot paths, with PostgreSQL's COPY.

`bulk_create` renders one placeholder per value: for a batch of 500 rows of 15 columns that is 7,500
placeholders compiled by the ORM and merged (and escaped) by the driver, which costs far more than
PostgreSQL's insert itself (measured in `make bench`: about 0.2 ms per deposit row against 0.01 ms in the
database). On PostgreSQL this writes the same rows with `COPY ... FROM STDIN`, formatted by psycopg's C
row writer. Values are prepared by each field exactly as `bulk_create` prepares them (`pre_save`,
`get_db_prep_save`); constraints, defaults of the model and the caller's transaction apply as usual.
Generated keys are drawn from the column's sequence first and set on the objects. Elsewhere (SQLite) it is
`bulk_create`. COPY bypasses Django's cursor wrappers, so these statements are not in `connection.queries`.

`insert_together` writes new rows of several models (an invoice, its items and its webhook event) in one
statement on PostgreSQL: one round trip, and atomic by itself, so a caller in autocommit needs no BEGIN and
COMMIT around it. With a `Source`, the same statement first runs the caller's own queries (a balance hold)
and makes each row from their result (`Expr` values), or makes none when they have none.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import (
    AutoField,
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    DateTimeField,
    DecimalField,
    EmailField,
    Field,
    ForeignKey,
    IntegerField,
    Model,
    OneToOneField,
    PositiveBigIntegerField,
    PositiveIntegerField,
    PositiveSmallIntegerField,
    SmallIntegerField,
    TextField,
    UUIDField,
)
from psycopg import sql

from core.fields import MoneyField

M = TypeVar("M", bound=Model)


def bulk_insert(objs: Sequence[M], *, batch_size: int = 1000) -> list[M]:
    """Insert `objs` (all of one model, new rows) and return them with their primary keys set."""
    if not objs:
        return []
    db = connections[DEFAULT_DB_ALIAS]  # the connection itself: the `connection` proxy costs a lookup per use
    if db.vendor != "postgresql":
        return type(objs[0])._default_manager.bulk_create(objs, batch_size=batch_size)
    for start in range(0, len(objs), batch_size):
        _insert(db, objs[start : start + batch_size])
    return list(objs)


def _insert(db: BaseDatabaseWrapper, objs: Sequence[Model]) -> None:
    meta = type(objs[0])._meta
    pk = meta.pk
    assert pk is not None
    keyless = [obj for obj in objs if obj.pk is None]
    if isinstance(pk, AutoField) and keyless:  # BigAutoField and SmallAutoField subclass it
        # Keys drawn from the column's sequence first, so each object gets its own row's key without relying
        # on the order of RETURNING.
        with db.cursor() as cursor:
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                [meta.db_table, pk.column, len(keyless)],
            )
            for obj, (new_pk,) in zip(keyless, cursor.fetchall(), strict=True):
                setattr(obj, pk.attname, new_pk)
    fields = meta.concrete_fields
    columns = [[_prepared(field, field.pre_save(obj, add=True), db) for obj in objs] for field in fields]
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(meta.db_table),
        sql.SQL(", ").join(sql.Identifier(str(field.column)) for field in fields),
    )
    # wrap_database_errors: the driver's errors surface as Django's (IntegrityError, OperationalError ...),
    # as they do from every ORM statement.
    with db.cursor() as cursor, db.wrap_database_errors, cursor.cursor.copy(statement) as copy:
        for row in zip(*columns, strict=True):
            copy.write_row(row)
    for obj in objs:
        obj._state.adding = False
        obj._state.db = db.alias


# Above this many rows in all, `insert_together` writes with COPY: a VALUES list costs about 0.25 ms more per
# row than COPY (they break even near 20 rows on loopback, later over a network, where each round trip of
# COPY's key draw and statements costs more), and a statement carries at most 65,535 values, which a long
# list would pass (an invoice may have thousands of items).
TOGETHER_MAX_ROWS = 30


@dataclass(frozen=True)
class Expr:
    """A value `insert_together` writes as this SQL, with its own `%s` parameters, instead of a parameter.
    With a `Source`, it may read the columns of the source's row (`{name}.column`)."""

    sql: str
    params: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Source:
    """What the rows of `insert_together` are made from: `ctes`, the WITH-queries the statement starts with
    (SQL text with `%s` placeholders for `params`), the last of them named `name` and of at most one row.
    Each group's one row is then `INSERT ... SELECT ... FROM name`: no row there, no row inserted anywhere.
    `selects` are SQL values (of the queries) that `insert_together` returns."""

    ctes: str
    params: Sequence[Any]
    name: str
    selects: tuple[str, ...]


def insert_together(*groups: Sequence[Model], source: Source | None = None) -> tuple[Any, ...]:
    """Insert each group (new rows of one model) in one statement, in the order given, so a group may
    refer to the rows of an earlier one; primary keys drawn from a sequence are set on the objects.

    PostgreSQL, up to TOGETHER_MAX_ROWS rows in all: one `INSERT ... VALUES` per group, each a
    data-modifying CTE of the same statement, which commits or fails whole even in autocommit. More rows,
    or another database: `bulk_insert` per group in one transaction.

    With `source` (PostgreSQL, one row per group): the statement runs the source's queries first and makes
    the rows from its row, or none when it has none (then the objects are left unsaved); it returns the
    values of `source.selects`."""
    groups = tuple(group for group in groups if group)
    if not groups:
        return ()
    db = connections[DEFAULT_DB_ALIAS]
    if source is None and (
        db.vendor != "postgresql" or sum(len(group) for group in groups) > TOGETHER_MAX_ROWS
    ):
        with transaction.atomic():
            for group in groups:
                bulk_insert(group)
        return ()
    if source is not None and (db.vendor != "postgresql" or any(len(group) != 1 for group in groups)):
        raise ValueError("insert_together from a source needs PostgreSQL and one row per group.")
    # A key from the column's sequence comes back through RETURNING, in the order of the VALUES rows (what
    # Django's bulk_create relies on for PostgreSQL as well).
    shape = tuple(
        (type(group[0]), len(group), isinstance(type(group[0])._meta.pk, AutoField) and _keyless(group))
        for group in groups
    )
    if source is None:  # the hot path of an invoice create: every value a parameter
        exprs: tuple[str | None, ...] = ()
        params: list[Any] = [_prepared(field, value, db) for field, value in _values(shape, groups)]
    else:
        exprs, params = _with_exprs(shape, groups, source, db)
    statement = _together_sql(shape, exprs, source and (source.ctes, source.name, source.selects))
    with db.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if source is not None:
        # The statement's first value: the source's row count (0 or 1); its selects follow.
        made, row = row[0], row[1:]
        selected, row = tuple(row[: len(source.selects)]), row[len(source.selects) :]
        if not made:
            return selected  # nothing was written
    drawn_keys = iter(row)
    for (model, _, drawn), group in zip(shape, groups, strict=True):
        if drawn:
            pk = model._meta.pk
            for obj, value in zip(group, next(drawn_keys), strict=True):
                setattr(obj, pk.attname, value)
    for group in groups:
        for obj in group:
            obj._state.adding = False
            obj._state.db = db.alias
    return selected if source is not None else ()


def _with_exprs(
    shape: tuple[tuple[type[Model], int, bool], ...],
    groups: Sequence[Sequence[Model]],
    source: Source,
    db: BaseDatabaseWrapper,
) -> tuple[tuple[str | None, ...], list[Any]]:
    """The values' SQL (that of each `Expr`, None for a parameter) and the parameters, the source's first."""
    exprs: list[str | None] = []
    params = list(source.params)
    for field, value in _values(shape, groups):
        if type(value) is Expr:
            exprs.append(value.sql)
            params.extend(value.params)
        else:
            exprs.append(None)
            params.append(_prepared(field, value, db))
    return tuple(exprs), params


def _values(
    shape: tuple[tuple[type[Model], int, bool], ...], groups: Sequence[Sequence[Model]]
) -> Iterator[tuple[Field, Any]]:
    """(field, value to write) of every row of every group, in the statement's order."""
    for (model, _, drawn), group in zip(shape, groups, strict=True):
        fields = _written_fields(model, drawn)
        for obj in group:
            for field in fields:
                yield field, field.pre_save(obj, add=True)


def _keyless(group: Sequence[Model]) -> bool:
    return all(obj.pk is None for obj in group)


def _written_fields(model: type[Model], drawn: bool) -> list[Field]:
    return [field for field in model._meta.concrete_fields if not (drawn and field.primary_key)]


@functools.lru_cache(maxsize=256)
def _together_sql(
    shape: tuple[tuple[type[Model], int, bool], ...],
    exprs: tuple[str | None, ...],
    source: tuple[str, str, tuple[str, ...]] | None,
) -> str:
    """The statement of `insert_together` for groups of these (model, rows, keys drawn), values (the SQL of
    each `Expr`, None for a parameter) and source (its queries, name and selects): built once per shape and
    process, since composing it costs as much as running it. Its one row holds, with a source, the count of
    the source's rows and its selects, then the drawn keys of each group that draws them, as an array, in
    VALUES order."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    parts, keys = [source[0]] if source else [], []
    values = iter(exprs or ())
    for index, (model, rows, drawn) in enumerate(shape):
        fields = _written_fields(model, drawn)
        made = [", ".join((next(values, None) or "%s") for _ in fields) for _ in range(rows)]
        columns = ", ".join(quote(str(field.column)) for field in fields)
        pk = quote(str(model._meta.pk.column))  # type: ignore[union-attr]
        returning = f" RETURNING {pk}" if drawn else ""
        # Table and column names from the models; every value is a parameter or the caller's SQL.
        selecting = f"SELECT {made[0]} FROM {source[1]}" if source else ""  # noqa: S608
        rows_sql = selecting or "VALUES " + ", ".join(f"({row})" for row in made)
        table = quote(model._meta.db_table)
        parts.append(f"insert_{index} AS (INSERT INTO {table} ({columns}) {rows_sql}{returning})")
        if drawn:
            keys.append(f"(SELECT array_agg({pk}) FROM insert_{index})")  # noqa: S608
    selected = [f"(SELECT count(*) FROM {source[1]})", *source[2]] if source else []  # noqa: S608
    selected += keys
    return f"WITH {', '.join(parts)} SELECT {', '.join(selected) or 1}"


# Field classes (exactly these, not subclasses that may prepare values their own way) whose
# `get_db_prep_save` returns a value of the given type unchanged on PostgreSQL (the only database that runs
# these paths): the hot path skips the call for them. core/tests/test_bulkinsert_prepared.py holds every
# shortcut below to what the call returns.
_UNCHANGED: dict[type[Field], type] = {
    UUIDField: uuid.UUID,  # a native uuid column takes the UUID as it is
    **{cls: str for cls in (CharField, TextField, EmailField)},
    **{
        cls: int
        for cls in (
            IntegerField,
            SmallIntegerField,
            BigIntegerField,
            PositiveIntegerField,
            PositiveSmallIntegerField,
            PositiveBigIntegerField,
            AutoField,
            BigAutoField,
        )
    },
    BooleanField: bool,
}
_TEXT = (CharField, TextField, EmailField)  # a str subclass (a TextChoices member) is written as it is, too
_DECIMAL = (DecimalField, MoneyField)  # a finite Decimal is written as it is (no rounding on PostgreSQL)
_KEYS = (ForeignKey, OneToOneField)  # the key as its target field writes it
# These write None as None (SQL NULL).
_NONE_AS_IS = frozenset({*_UNCHANGED, *_DECIMAL, *_KEYS, DateTimeField})


def _prepared(field: Field, value: object, db: BaseDatabaseWrapper) -> object:
    kind = type(field)
    if type(value) is _UNCHANGED.get(kind):
        return value
    if value is None:
        if kind in _NONE_AS_IS:
            return None
    elif kind in _KEYS:
        if type(value) is _UNCHANGED.get(type(field.target_field)):  # type: ignore[attr-defined]
            return value
    elif kind in _TEXT:
        if isinstance(value, str):
            return value
    elif kind in _DECIMAL:
        if type(value) is Decimal and value.is_finite():
            return value
    elif type(value) is datetime and kind is DateTimeField and value.tzinfo is not None:
        return value  # an aware datetime is written as it is (a naive one goes through Django's warning)
    return field.get_db_prep_save(value, db)
