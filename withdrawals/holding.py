"""How `withdrawal_accept` (withdrawals.services) holds the balance, draws the uids and makes the rows.

Three ways, one result (withdrawals/tests/test_accept_fast_path.py compares them):

- `accept_one_statement`: one item, in autocommit, on PostgreSQL (an API withdrawal without an
  Idempotency-Key or a payout policy, the common case): the hold, the uid and the three rows (ledger entry,
  withdrawal, webhook event) in one statement, which commits whole or writes nothing. When it makes
  nothing (a short or missing account), or fails whole (the company's first withdrawal: no counter row
  yet), the caller takes the next way in a transaction, which answers why or makes the counter row.
- `accept_one_code`: every item in one code, on PostgreSQL, in the caller's transaction: one statement
  locks the account, checks and holds the sum and draws the uids; the rows are written by the caller.
- `accept_locked`: several codes, or SQLite: every account locked (sorted), the uids drawn, the holds made.

The lock order is the one withdrawals.services describes: the accounts, then the counter.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Sequence
from decimal import localcontext
from typing import Any

import psycopg
from django.db import IntegrityError, connection

from core.bulkinsert import Expr, insert_together
from core.money import MONEY_CONTEXT
from payments.holds import AfterHold, ledger_hold_fresh, ledger_hold_source
from payments.ledger import account_for_update, ledger_hold_unwritten
from payments.models import Company, LedgerEntry
from webhooks.models import WebhookEvent
from withdrawals.models import Withdrawal, WithdrawalCounter
from withdrawals.rules import CheckedItem

Rows = Callable[[Sequence[str]], tuple[list[Withdrawal], list[WebhookEvent]]]
Accepted = tuple[list[LedgerEntry], list[Withdrawal], list[WebhookEvent]]


@functools.cache
def _counter_sql() -> tuple[str, AfterHold]:
    """The counter's `UPDATE ... RETURNING` (parameters: the count, the company's key), and the same update
    as the follow-up of a one-code hold (payments.holds), made in the statement that locks the account."""
    meta, quote = WithdrawalCounter._meta, connection.ops.quote_name
    table, key = quote(meta.db_table), quote(str(meta.get_field("company").column))
    sequence = quote(str(meta.get_field("next_sequence").column))
    bump = AfterHold(table, f"{sequence} = {sequence} + %s", f"{key} = %s", sequence)
    return f"UPDATE {table} SET {bump.assignments} WHERE {bump.condition} RETURNING {sequence}", bump  # noqa: S608


def _uids(company: Company, next_sequence: int, count: int) -> list[str]:
    """The `count` uids right before `next_sequence`, the counter's value after `count` was added."""
    return [f"{company.uid_prefix}-{sequence}" for sequence in range(next_sequence - count, next_sequence)]


def _next_uids(company: Company, count: int) -> list[str]:
    """`count` fresh uids, in one round trip: `UPDATE ... RETURNING` takes the counter row's lock and keeps it
    until commit. A concurrent caller waits for that lock, then (READ COMMITTED) adds to the row as the first
    one committed it, so no uid is ever handed out twice; a rolled-back call hands out nothing."""
    update, _ = _counter_sql()
    params = [count, _company_key(company)]
    with connection.cursor() as cursor:
        cursor.execute(update, params)
        row = cursor.fetchone()
        if row is None:  # the company's first withdrawal
            # A concurrent first withdrawal may insert the same row: our insert waits for it and is then
            # ignored as a conflict; either way the UPDATE then finds (and locks) the one committed row.
            WithdrawalCounter.objects.bulk_create([WithdrawalCounter(company=company)], ignore_conflicts=True)
            cursor.execute(update, params)
            row = cursor.fetchone()
    return _uids(company, row[0], count)


def _company_key(company: Company) -> Any:
    return WithdrawalCounter._meta.get_field("company").get_db_prep_value(company.pk, connection)


def accept_one_code(company: Company, items: Sequence[CheckedItem], rows: Rows) -> Accepted:
    """Every item in one code, on PostgreSQL (the common case), with the account locked as briefly as can
    be: each withdrawal of a merchant queues on that lock. The rows are made before it, with a placeholder
    uid; one statement (payments.holds.ledger_hold_fresh) locks the account, checks and holds the sum and
    draws the uids from the counter, after the account; the uids are filled in, then the rows written."""
    count = len(items)
    with localcontext(MONEY_CONTEXT):
        amounts = [item.amount + item.fee for item in items]
    placeholder = _placeholder()
    withdrawals, events = rows([placeholder] * count)
    after = [count, _company_key(company)]
    # The account's row lock from here until the transaction ends.
    hold = ledger_hold_fresh(
        company_id=company.pk,
        code=items[0].code,
        amounts=amounts,
        after=_counter_sql()[1],
        after_params=after,
    )
    # None: the company's first withdrawal, whose counter row is created now (still after the account).
    uids = _next_uids(company, count) if hold.after is None else _uids(company, hold.after, count)
    _fill_uids(withdrawals, events, uids, placeholder)
    # No replay read: each reference carries a uid just drawn from the counter (unique ledger_entry_once).
    return hold.unwritten([withdrawal.reference for withdrawal in withdrawals]), withdrawals, events


def accept_locked(company: Company, items: Sequence[CheckedItem], rows: Rows) -> Accepted:
    """Items in several codes, or SQLite: lock every account (sorted), draw the uids, hold, make the rows."""
    locked = {  # accounts first: see the lock order above
        code: account_for_update(company_id=company.pk, code=code) for code in sorted({i.code for i in items})
    }
    uids = _next_uids(company, len(items))
    with localcontext(MONEY_CONTEXT):
        holds = [
            (item.code, item.amount + item.fee, f"withdrawal:{uid}")
            for item, uid in zip(items, uids, strict=True)
        ]
    # Every check made and the accounts updated; the entries come back unsaved and are written by the
    # caller, in this transaction. No replay read: each reference carries a uid just drawn from the counter
    # (see ledger_hold_unwritten and the unique ledger_entry_once).
    entries = ledger_hold_unwritten(company_id=company.pk, holds=holds, locked=locked)
    return entries, *rows(uids)


def accept_one_statement(company: Company, item: CheckedItem, rows: Rows) -> Accepted | None:
    """One item in autocommit on PostgreSQL, all written by one statement (payments.holds.ledger_hold_source):
    the account held, the counter drawn, then the entry, the withdrawal and its webhook event, whose uid the
    statement makes from the counter. None, having changed nothing, when the statement made nothing, or
    failed whole for want of a counter row (the company's first withdrawal)."""
    placeholder = _placeholder()
    (withdrawal,), (event,) = rows([placeholder])
    with localcontext(MONEY_CONTEXT):
        amount = item.amount + item.fee
    source, entry = ledger_hold_source(
        company_id=company.pk,
        code=item.code,
        amount=amount,
        after=_counter_sql()[1],
        after_params=[1, _company_key(company)],
    )
    # The uid is `<prefix>-<sequence>`, the sequence the counter's value before the statement added 1; a NULL
    # one (no counter row: the statement cannot make it) refuses the rows (NOT NULL) and so the statement.
    uid_sql = "(%s::text || (hold.after_value - 1)::text)"

    def with_uid(text: str) -> Expr:
        return Expr(f"replace(%s::text, %s::text, {uid_sql})", (text, placeholder, f"{company.uid_prefix}-"))

    entry.reference = with_uid(withdrawal.reference)  # type: ignore[assignment]
    withdrawal.uid = with_uid(placeholder)  # type: ignore[assignment]
    event.object_id = with_uid(placeholder)  # type: ignore[assignment]
    body, event.body = event.body, with_uid(event.body)  # type: ignore[assignment]
    try:
        account_id, after_value = insert_together([entry], [withdrawal], [event], source=source)
    except IntegrityError as exc:
        if not isinstance(exc.__cause__, psycopg.errors.NotNullViolation):
            raise
        return None  # no counter row yet: the transaction's way makes it (any other NULL, it raises too)
    if account_id is None:
        return None
    # The objects as the statement wrote them.
    event.body = body
    _fill_uids([withdrawal], [event], _uids(company, after_value, 1), placeholder)
    entry.account_id, entry.reference = account_id, withdrawal.reference
    return [entry], [withdrawal], [event]


def _placeholder() -> str:
    return f"<uid {secrets.token_hex(8)}>"  # "<" is in no address: no other field of a body has it


def _fill_uids(
    withdrawals: Sequence[Withdrawal], events: Sequence[WebhookEvent], uids: Sequence[str], placeholder: str
) -> None:
    """The uids in place of the placeholder the rows were made with: each withdrawal's, its event's."""
    for withdrawal, event, uid in zip(withdrawals, events, uids, strict=True):
        withdrawal.uid = event.object_id = uid
        event.body = event.body.replace(placeholder, uid)
