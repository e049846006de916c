"""Holds numbered from a counter row, written with the caller's rows: how a withdrawal is accepted.

`ledger_hold_numbered` holds each amount (available -> held, all or nothing), draws one number per hold
from the caller's counter row (a withdrawal's uid, `<prefix>-<sequence>`), and writes the hold entries,
whose references carry the numbers, together with the caller's rows, which carry a placeholder wherever a
number goes (the withdrawal's uid, its webhook event's object id and body). Locks in one order, the one
every path of the ledger keeps: the accounts (sorted by code), then the counter; nobody locks an account
while holding the counter.

One way in, one transaction: the caller's, or one of its own when the caller is in autocommit. How it
is written is the ledger's affair, and the forms below give the same rows (payments/tests/test_numbered.py
holds them to each other):

- one hold, the caller in autocommit, on PostgreSQL: one statement holds, draws and writes everything, so
  it commits whole or writes nothing (no BEGIN, no COMMIT: the API's one-item withdrawal). When it wrote
  nothing (a short or missing account) or failed whole (no counter row yet), the next form runs in a
  transaction of its own, and says why or makes the counter row.
- one code, on PostgreSQL: one statement locks the account, checks and holds the sum and draws the numbers
  (payments.ledger._statement); the rows follow in one more statement.
- several codes, or SQLite: the accounts locked (sorted), the counter drawn, the accounts updated; the rows
  follow.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.db.models import Model

from core.bulkinsert import Expr, insert_together
from payments.ledger import _statement
from payments.ledger.entries import CompanyId, _hold_many, account_for_update
from payments.models import LedgerEntry

# The caller's new rows, made with one placeholder per hold where its number's text goes: groups of one
# model each, written in the order given after the hold entries (so they may refer to earlier groups).
Rows = Callable[[Sequence[str]], Sequence[Sequence[Model]]]


@dataclass(frozen=True)
class Numbering:
    """The counter row numbers are drawn from: the row of `model` whose `key_field` is `key`, its integer
    `field` the next number. Number n is written `f"{prefix}{n}"`, and a hold's reference is `reference`
    with that text in place of `{}` ("withdrawal:{}")."""

    model: type[Model]
    key_field: str
    key: Any
    field: str
    prefix: str
    reference: str

    def texts(self, next_number: int, count: int) -> list[str]:
        """The texts of the `count` numbers right before `next_number`, the counter's value after them."""
        return [f"{self.prefix}{number}" for number in range(next_number - count, next_number)]


@dataclass(frozen=True)
class Numbered:
    """A hold made and written: the numbers' texts in the order of the holds, the hold entries, and the
    caller's rows (as `rows` made them, with the texts in place of the placeholders)."""

    texts: list[str]
    entries: list[LedgerEntry]
    rows: Sequence[Sequence[Model]]


def ledger_hold_numbered(
    *,
    company_id: CompanyId,
    holds: Sequence[tuple[str, Decimal]],
    numbering: Numbering,
    rows: Rows,
) -> Numbered:
    """Hold each (code, amount) of `holds`, draw one number per hold, write the entries and `rows`.

    Raises InsufficientBalance (every short code with its available amount and the sum requested) having
    written nothing. In the caller's transaction, with no savepoint of its own; in one of its own when the
    caller is in autocommit.
    """
    if not holds:
        raise ValueError("A numbered hold needs at least one amount.")
    db = connections[DEFAULT_DB_ALIAS]
    if not db.in_atomic_block:
        if len(holds) == 1 and db.vendor == "postgresql":
            made = _one_statement(company_id, holds[0], numbering, rows)
            if made is not None:
                return made
        with transaction.atomic():
            return ledger_hold_numbered(company_id=company_id, holds=holds, numbering=numbering, rows=rows)
    token = _token()
    made_rows = rows(_placeholders(token, len(holds)))  # before the locks: they are held as briefly as can be
    one_code = db.vendor == "postgresql" and len({code for code, _ in holds}) == 1
    texts, entries = (_one_code if one_code else _locking)(company_id, holds, numbering)
    _fill(made_rows, token, texts)
    insert_together(entries, *made_rows)
    return Numbered(texts, entries, made_rows)


def _one_code(
    company_id: CompanyId, holds: Sequence[tuple[str, Decimal]], numbering: Numbering
) -> tuple[list[str], list[LedgerEntry]]:
    """One statement locks the account, holds the sum and draws the numbers (PostgreSQL, one code): the
    texts and the unsaved entries."""
    hold = _statement.hold_fresh(
        company_id=company_id,
        code=holds[0][0],
        amounts=[amount for _, amount in holds],
        after=_bump(numbering),
        after_params=[len(holds), _key(numbering)],
    )
    # None: no counter row yet; it is made now, still after the account.
    next_number = _draw(numbering, len(holds)) if hold.after is None else hold.after
    texts = numbering.texts(next_number, len(holds))
    return texts, hold.unwritten([numbering.reference.format(text) for text in texts])


def _locking(
    company_id: CompanyId, holds: Sequence[tuple[str, Decimal]], numbering: Numbering
) -> tuple[list[str], list[LedgerEntry]]:
    """Every account locked (sorted), the numbers drawn, the accounts updated: the texts and the unsaved
    entries."""
    locked = {  # the accounts first: see the lock order above
        account.code: account
        for account in (
            account_for_update(company_id=company_id, code=code) for code in sorted({c for c, _ in holds})
        )
    }
    texts = numbering.texts(_draw(numbering, len(holds)), len(holds))
    # No replay read: each reference carries a number just drawn from the counter; were one written before
    # after all, the unique ledger_entry_once fails the whole transaction.
    numbered = [
        (code, amount, numbering.reference.format(text))
        for (code, amount), text in zip(holds, texts, strict=True)
    ]
    return texts, _hold_many(company_id, numbered, locked, fresh=True)


def _one_statement(
    company_id: CompanyId, hold: tuple[str, Decimal], numbering: Numbering, rows: Rows
) -> Numbered | None:
    """The one hold, its number, its entry and the rows in one statement, in autocommit (PostgreSQL). None,
    having written nothing, when the statement made nothing or failed whole for want of a counter row."""
    code, amount = hold
    token = _token()
    (placeholder,) = _placeholders(token, 1)
    made_rows = rows([placeholder])
    source, entry = _statement.hold_source(
        company_id=company_id,
        code=code,
        amount=amount,
        after=_bump(numbering),
        after_params=[1, _key(numbering)],
    )
    entry.reference = numbering.reference.format(placeholder)
    # The number is the counter's value before the statement added 1; a NULL one (no counter row: the
    # statement cannot make it) makes every filled text NULL, which the NOT NULL columns refuse, and so the
    # statement.
    number_sql = "(%s::text || (hold.after_value - 1)::text)"
    kept: list[tuple[Model, str, str]] = []
    for instance in (entry, *(row for group in made_rows for row in group)):
        for attname, value in _texts_with(instance, token):
            kept.append((instance, attname, value))
            filled = Expr(
                f"replace(%s::text, %s::text, {number_sql})", (value, placeholder, numbering.prefix)
            )
            setattr(instance, attname, filled)
    try:
        account_id, next_number = insert_together([entry], *made_rows, source=source)
    except IntegrityError as exc:
        if not isinstance(exc.__cause__, psycopg.errors.NotNullViolation):
            raise
        account_id = None  # no counter row yet: the transaction's way makes it (any other NULL raises there)
    for instance, attname, value in kept:  # the objects as written, or as they were
        setattr(instance, attname, value)
    if account_id is None:
        return None
    texts = numbering.texts(next_number, 1)
    entry.account_id = account_id
    _fill([[entry], *made_rows], token, texts)
    return Numbered(texts, [entry], made_rows)


def _token() -> str:
    return secrets.token_hex(8)


def _placeholders(token: str, count: int) -> list[str]:
    # "<" is in no address, uid or code: no other text of a row has it.
    return [f"<n {token}:{index}>" for index in range(count)]


def _texts_with(instance: Model, token: str) -> list[tuple[str, str]]:
    """The (attribute, text) of the instance's fields whose text has a placeholder of `token`."""
    mark = f"<n {token}:"
    found = []
    for field in instance._meta.concrete_fields:
        value = getattr(instance, field.attname)
        if isinstance(value, str) and mark in value:
            found.append((field.attname, value))
    return found


def _fill(groups: Sequence[Sequence[Model]], token: str, texts: Sequence[str]) -> None:
    """Each placeholder of `token` in the rows' texts replaced by its number's text."""
    pattern = re.compile(rf"<n {token}:(\d+)>")

    def text(match: re.Match[str]) -> str:
        return texts[int(match[1])]

    for group in groups:
        for instance in group:
            for attname, value in _texts_with(instance, token):
                setattr(instance, attname, pattern.sub(text, value))


def _key(numbering: Numbering) -> Any:
    field = numbering.model._meta.get_field(numbering.key_field)
    return field.get_db_prep_value(numbering.key, connections[DEFAULT_DB_ALIAS])  # type: ignore[union-attr]


@functools.lru_cache(maxsize=16)
def _counter(model: type[Model], key_field: str, field: str) -> tuple[str, _statement.AfterHold]:
    """The counter's `UPDATE ... RETURNING` (parameters: the count, the key), and the same update as the
    follow-up of a one-code hold, made in the statement that locks the account."""
    meta, quote = model._meta, connections[DEFAULT_DB_ALIAS].ops.quote_name
    table = quote(meta.db_table)
    key, column = quote(str(meta.get_field(key_field).column)), quote(str(meta.get_field(field).column))  # type: ignore[union-attr]
    bump = _statement.AfterHold(table, f"{column} = {column} + %s", f"{key} = %s", column)
    return f"UPDATE {table} SET {bump.assignments} WHERE {bump.condition} RETURNING {column}", bump  # noqa: S608


def _bump(numbering: Numbering) -> _statement.AfterHold:
    return _counter(numbering.model, numbering.key_field, numbering.field)[1]


def _draw(numbering: Numbering, count: int) -> int:
    """The counter's value after `count` was added, in one round trip: `UPDATE ... RETURNING` takes the
    row's lock and keeps it until commit. A concurrent caller waits for that lock, then (READ COMMITTED)
    adds to the row as the first one committed it, so no number is ever handed out twice; a rolled-back
    call hands out nothing."""
    update, _ = _counter(numbering.model, numbering.key_field, numbering.field)
    params = [count, _key(numbering)]
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(update, params)
        row = cursor.fetchone()
        if row is None:  # the row's first number
            # A concurrent first draw may insert the same row: our insert waits for it and is then ignored
            # as a conflict; either way the UPDATE then finds (and locks) the one committed row.
            attname = numbering.model._meta.get_field(numbering.key_field).attname  # type: ignore[union-attr]
            first = numbering.model(**{attname: numbering.key})
            numbering.model._default_manager.bulk_create([first], ignore_conflicts=True)
            cursor.execute(update, params)
            row = cursor.fetchone()
    return int(row[0])
