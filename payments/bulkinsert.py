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
COMMIT around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import (
    AutoField,
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    Field,
    IntegerField,
    Model,
    PositiveBigIntegerField,
    PositiveIntegerField,
    PositiveSmallIntegerField,
    SmallIntegerField,
    TextField,
)
from psycopg import sql

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


def insert_together(*groups: Sequence[Model]) -> None:
    """Insert each group (new rows of one model) in one statement, in the order given, so a group may
    refer to the rows of an earlier one; primary keys drawn from a sequence are set on the objects.

    PostgreSQL: one `INSERT ... VALUES` per group, each a data-modifying CTE of the same statement, which
    commits or fails whole even in autocommit. Elsewhere: `bulk_create` per group in one transaction."""
    groups = tuple(group for group in groups if group)
    if not groups:
        return
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql":
        with transaction.atomic():
            for group in groups:
                type(group[0])._default_manager.bulk_create(group)
        return
    parts: list[sql.Composed] = []
    params: list[Any] = []
    keyed: list[tuple[int, Sequence[Model], Field]] = []
    for index, group in enumerate(groups):
        meta = type(group[0])._meta
        pk = meta.pk
        assert pk is not None
        # A key from the column's sequence comes back through RETURNING, in the order of the VALUES rows
        # (what Django's bulk_create relies on for PostgreSQL as well).
        drawn = isinstance(pk, AutoField) and all(obj.pk is None for obj in group)
        fields = [field for field in meta.concrete_fields if not (drawn and field is pk)]
        row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        statement = sql.SQL("{} AS (INSERT INTO {} ({}) VALUES {}{})").format(
            sql.Identifier(f"insert_{index}"),
            sql.Identifier(meta.db_table),
            sql.SQL(", ").join(sql.Identifier(str(field.column)) for field in fields),
            sql.SQL(", ".join([row] * len(group))),
            sql.SQL(" RETURNING {}").format(sql.Identifier(str(pk.column))) if drawn else sql.SQL(""),
        )
        parts.append(statement)
        params += [_prepared(field, field.pre_save(obj, add=True), db) for obj in group for field in fields]
        if drawn:
            keyed.append((index, group, pk))
    keys = sql.SQL(", ").join(
        sql.SQL("(SELECT array_agg({}) FROM {})").format(
            sql.Identifier(str(pk.column)), sql.Identifier(f"insert_{i}")
        )
        for i, _, pk in keyed
    )
    statement = sql.SQL("WITH {} SELECT {}").format(sql.SQL(", ").join(parts), keys or sql.SQL("1"))
    with db.cursor() as cursor:
        cursor.execute(statement.as_string(cursor.cursor), params)
        drawn_keys = cursor.fetchone()
    for (_, group, pk), values in zip(keyed, drawn_keys if keyed else (), strict=True):
        for obj, value in zip(group, values, strict=True):
            setattr(obj, pk.attname, value)
    for group in groups:
        for obj in group:
            obj._state.adding = False
            obj._state.db = db.alias


# Field classes (exactly these, not subclasses that may prepare values their own way) whose
# `get_db_prep_save` returns a value of the given type unchanged: the hot path skips the call for them.
_UNCHANGED: dict[type[Field], type] = {
    **{cls: str for cls in (CharField, TextField)},
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


def _prepared(field: Field, value: object, db: BaseDatabaseWrapper) -> object:
    if type(value) is _UNCHANGED.get(type(field)):
        return value
    return field.get_db_prep_save(value, db)
