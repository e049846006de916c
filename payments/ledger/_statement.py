"""The hold of fresh numbered holds in one code as one statement (PostgreSQL): the hot path of a withdrawal.
Private to the ledger package: payments.ledger.numbered is its only caller.

Every withdrawal of a merchant queues on its account's row lock, so the time that lock is held bounds how
many it can make per second. `ledger_hold_many` takes the lock with a `SELECT ... FOR UPDATE` and
changes the balance with an `UPDATE` after the caller drew its uids: three round trips under the lock.
Here one conditional `UPDATE` is the lock, the check and the change together, and the caller's own
one-row update (the withdrawal uid counter) runs in the same statement, after it. The CHECK constraints
(available >= 0, held >= 0) back the check as everywhere else in the ledger, and the entries are the rows
`ledger_hold_many` makes: kind withdrawal_hold, available_delta -amount, held_delta +amount, one per
amount, references made from what the caller's update returned (fresh by construction, never replays:
the unique ledger_entry_once refuses one all the same).
"""

from __future__ import annotations

import decimal
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import DEFAULT_DB_ALIAS, NotSupportedError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from core.assets import Asset, get_asset
from core.bulkinsert import Expr, Source
from core.money import MONEY_CONTEXT
from payments.ledger.entries import (
    CompanyId,
    InsufficientBalance,
    Kind,
    Shortfall,
    _require_amount,
    _require_reference,
)
from payments.models import Account, LedgerEntry

_ZERO = Decimal(0)


@dataclass(frozen=True)
class AfterHold:
    """The caller's one-row update, made by the hold's statement after the hold and only when the hold is
    made: `UPDATE {table} SET {assignments} WHERE {condition} RETURNING {returning}`. SQL text of table
    and column names (quoted) and `%s` placeholders only: the values are `after_params` of the call, those
    of `assignments` first. The row locks it takes come after the account's, never without it."""

    table: str
    assignments: str
    condition: str
    returning: str


@dataclass(frozen=True)
class FreshHold:
    """A hold made: `entries` unsaved, one per amount in order, their references still to be set
    (`unwritten`); `after` what the caller's update returned, None when its row does not exist (the hold
    is made all the same, and the account stays locked until the transaction ends)."""

    entries: list[LedgerEntry]
    after: Any

    def unwritten(self, references: Sequence[str]) -> list[LedgerEntry]:
        """The entries with these references (one each, in order), for the caller to write in this
        transaction."""
        if len(set(references)) != len(references):
            raise ValueError("A reference appears twice in one hold.")
        for entry, reference in zip(self.entries, references, strict=True):
            _require_reference(reference)
            entry.reference = reference
        return self.entries


def hold_fresh(
    *,
    company_id: CompanyId,
    code: str,
    amounts: Sequence[Decimal],
    after: AfterHold,
    after_params: Sequence[Any],
) -> FreshHold:
    """Hold the sum of `amounts` in `code`, all or nothing, and run `after`, in one statement.

    PostgreSQL only; inside the caller's transaction, whose end releases the account's row lock taken
    here. Raises InsufficientBalance as `ledger_hold_many` does (the code, its available amount, the sum
    requested) having changed nothing, `after` included.
    """
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql":
        raise NotSupportedError(
            "hold_fresh needs PostgreSQL; elsewhere the locking form of payments.ledger.numbered."
        )
    if not db.in_atomic_block:
        raise transaction.TransactionManagementError("hold_fresh must run inside transaction.atomic.")
    # Everything but the statement happens before it, so that the account is locked as briefly as can be.
    asset, total, entries, params = _hold_values(db, company_id, code, amounts)
    params += after_params
    statement = _statement(after)

    account_id, after_value = _run(db, statement, params)
    if account_id is None:
        # No row matched: the account is missing or was short when the update looked at it. Lock it to read
        # what it holds, so that the refusal reports the balance it is made against.
        available = (
            Account.objects.select_for_update()
            .filter(company_id=company_id, code=asset.code)
            .values_list("available", flat=True)
            .first()
        )
        if available is None or available < total:
            shortfall = Shortfall(asset.code, _ZERO if available is None else available, total)
            raise InsufficientBalance(shortfalls=[shortfall])
        # Enough after all (a credit committed since the update looked): the lock is ours, so this matches.
        account_id, after_value = _run(db, statement, params)
        if account_id is None:  # pragma: no cover - the locked balance was just read
            raise InsufficientBalance(shortfalls=[Shortfall(asset.code, available, total)])
    for entry in entries:
        entry.account_id = account_id
    return FreshHold(entries, after_value)


def hold_source(
    *, company_id: CompanyId, code: str, amount: Decimal, after: AfterHold, after_params: Sequence[Any]
) -> tuple[Source, LedgerEntry]:
    """`hold_fresh` of one amount for a caller in autocommit that writes its rows in the same
    statement: `insert_together(entry, *its rows, source=...)` (core.bulkinsert). The hold, `after` and
    the rows then commit together, or nothing is written at all.

    The source's one row, `hold`, holds the account's key (`hold.account_id`) and what `after` returned
    (`hold.after_value`), which the caller's rows read through `Expr` values (the entry's reference, set
    by the caller, too; its account is the source's). It has no row, and nothing is held, updated or
    written, when the account is missing or short: the caller then takes the way of `hold_fresh` in
    a transaction, which says which. `insert_together` returns `(account key, after value)`, both None
    then. When `after`'s row does not exist, `hold.after_value` is NULL, and the entry's reference, which
    the caller makes from it, is refused (NOT NULL): the statement fails whole with an IntegrityError, and
    the caller takes the same way. PostgreSQL only."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql" or db.in_atomic_block:
        raise transaction.TransactionManagementError("hold_source runs in autocommit, on PostgreSQL.")
    _, _, (entry,), params = _hold_values(db, company_id, code, [amount])
    entry.account_id = Expr("hold.account_id")  # type: ignore[assignment]  # written by insert_together
    source = Source(
        ctes=_source_ctes(after),
        params=[*params, *after_params],
        name="hold",
        selects=("(SELECT account_id FROM hold)", "(SELECT after_value FROM hold)"),
    )
    return source, entry


def _hold_values(
    db: BaseDatabaseWrapper, company_id: CompanyId, code: str, amounts: Sequence[Decimal]
) -> tuple[Asset, Decimal, list[LedgerEntry], list[Any]]:
    """The amounts checked; their asset and sum, the unsaved entries, and the parameters of `held`."""
    asset = get_asset(code)
    if not amounts:
        raise ValueError("A hold needs at least one amount.")
    for amount in amounts:
        _require_amount(amount, asset)
    with decimal.localcontext(MONEY_CONTEXT):  # exact: the default 28 digits could round a 36-digit sum
        total = sum(amounts, _ZERO)
        # copy_negate, not unary minus: minus rounds to the context's digits (as in payments.ledger).
        entries = [
            LedgerEntry(kind=Kind.WITHDRAWAL_HOLD, available_delta=amount.copy_negate(), held_delta=amount)
            for amount in amounts
        ]
    company = Account._meta.get_field("company").get_db_prep_value(company_id, db)
    return asset, total, entries, [total, total, timezone.now(), company, asset.code, total]


def _run(db: BaseDatabaseWrapper, statement: str, params: Sequence[Any]) -> tuple[int | None, Any]:
    with db.cursor() as cursor:
        cursor.execute(statement, params)
        account_id, after_value = cursor.fetchone()
    return account_id, after_value


@functools.lru_cache(maxsize=16)
def _statement(after: AfterHold) -> str:
    """One row: the account's key (NULL: nothing held) and what `after` returned (NULL: it changed no row).

    The order of the row locks. PostgreSQL runs the sub-statements of a WITH concurrently with each other,
    in an order it does not promise, and they see each other's work only through RETURNING (the manual,
    "Data-Modifying Statements in WITH"). So the order is made by data, not by position: `after_hold`'s
    WHERE reads `held`'s RETURNING. An UPDATE locks a row only as it updates it, once the row was found
    to match its WHERE ("Read Committed Isolation Level": a target row is one that matches the search
    condition, re-checked on the newer version when it had to wait for one); `after_hold`'s row can match
    only once `held` has returned its row, that is after `held` updated, and so locked, the account. The
    account is therefore locked before the caller's row, which is the order every other path keeps (the
    accounts, then the counter: a sweep locks the account before it withdraws), and a refused hold locks
    and changes nothing of the caller's. `held` checks the balance on the row version it updates: an
    UPDATE that waited for another transaction's lock re-checks `available >= total` on what that one
    committed.
    """
    held, after_hold = _ctes(after)
    return f"WITH {held}, {after_hold} SELECT (SELECT id FROM held), (SELECT after_value FROM after_hold)"  # noqa: S608


@functools.lru_cache(maxsize=16)
def _source_ctes(after: AfterHold) -> str:
    """`_statement`'s two queries and `hold`: one row when `held` made one, with a NULL `after_value` when
    `after`'s row does not exist (a company's first withdrawal, whose counter row is made on the way the
    caller then takes), which the caller's rows are refused for (NOT NULL): the statement then fails whole.

    `held` has no guard that `after`'s row exists. A guard is a subquery in `held`'s WHERE, which an UPDATE
    that waited for the account's lock evaluates again on the newer row version; every withdrawal of a
    merchant in one code waits on that lock, and the guard cost about 0.1 ms of database time per withdrawal
    at four at a time (pgbench, docs/operations.md)."""
    held, after_hold = _ctes(after)
    joined = "SELECT held.id AS account_id, after_hold.after_value FROM held LEFT JOIN after_hold ON true"
    return f"{held}, {after_hold}, hold AS ({joined})"


def _ctes(after: AfterHold) -> tuple[str, str]:
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    meta = Account._meta

    def column(name: str) -> str:
        return quote(str(meta.get_field(name).column))  # type: ignore[union-attr]

    available, held, pk = column("available"), column("held"), column("id")
    # Table and column names from the models and the caller; every value is a parameter.
    return (
        f"held AS (UPDATE {quote(meta.db_table)} SET {available} = {available} - %s, "  # noqa: S608
        f"{held} = {held} + %s, {column('updated_at')} = %s "
        f"WHERE {column('company')} = %s AND {column('code')} = %s AND {available} >= %s RETURNING {pk})",
        f"after_hold AS (UPDATE {after.table} SET {after.assignments} WHERE ({after.condition}) "  # noqa: S608
        f"AND EXISTS (SELECT 1 FROM held) RETURNING {after.returning} AS after_value)",
    )
