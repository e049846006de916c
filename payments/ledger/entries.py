"""Credits, holds, releases and posts (the package's docstring says what every change keeps).

Every operation is idempotent per (account, kind, reference): a replay returns the entry written the first
time and changes nothing, so a retried task or a deposit seen twice moves money once. A replay with another
amount is a bug in the caller and raises ValueError. Amounts are validated by the API layers first; here a
bad amount (not a Decimal, not positive, more places than the asset has) is a programming error: ValueError.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from uuid import UUID

from django.db import IntegrityError, transaction

from core.assets import Asset, get_asset
from core.bulkinsert import bulk_insert
from core.errors import DomainError, FieldError
from core.fields import MoneySum
from core.money import MONEY_CONTEXT, NotAnAmountType, check_range, decimal_places, number_text
from payments.models import Account, LedgerEntry

Kind = LedgerEntry.Kind
CompanyId = UUID | str
Holds = Sequence[tuple[str, Decimal, str]]  # (code, amount, reference) each

CREDIT_KINDS = frozenset({Kind.DEPOSIT_CREDIT, Kind.INVOICE_CREDIT, Kind.ADJUSTMENT})
_REFERENCE_MAX_LENGTH = LedgerEntry._meta.get_field("reference").max_length or 100
_ZERO = Decimal(0)


@dataclass(frozen=True)
class Shortfall:
    code: str
    available: Decimal
    requested: Decimal

    def describe(self) -> str:
        return f"{self.code} available {number_text(self.available)}, requested {number_text(self.requested)}"


class InsufficientBalance(DomainError):
    status = 400
    code = "insufficient_balance"
    default_detail = "The available balance is too low."

    def __init__(
        self,
        detail: str | None = None,
        *,
        errors: Iterable[FieldError] = (),
        shortfalls: Sequence[Shortfall] = (),
    ) -> None:
        self.shortfalls = list(shortfalls)
        if detail is None and self.shortfalls:
            detail = "Insufficient balance: " + "; ".join(short.describe() for short in self.shortfalls) + "."
        super().__init__(detail, errors=errors)


# --- Checks (programming errors: the API layers validate before calling) -----------------------------------


def _require_amount(amount: Decimal, asset: Asset) -> None:
    if isinstance(amount, bool) or not isinstance(amount, Decimal):
        raise NotAnAmountType(f"A ledger amount must be a Decimal, not {type(amount).__name__}.")
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"A ledger amount must be a positive finite Decimal, not {amount}.")
    if decimal_places(amount) > asset.amount_decimals:
        raise ValueError(
            f"{amount} has more than the {asset.amount_decimals} decimal places {asset.code} allows."
        )
    check_range(amount)


def _require_reference(reference: str) -> None:
    if not isinstance(reference, str) or not reference.strip():
        raise ValueError("A ledger reference must be a non-empty string.")
    if len(reference) > _REFERENCE_MAX_LENGTH:
        raise ValueError(f"A ledger reference is at most {_REFERENCE_MAX_LENGTH} characters.")


def _require_replay_matches(entry: LedgerEntry, available_delta: Decimal, held_delta: Decimal) -> None:
    if entry.available_delta != available_delta or entry.held_delta != held_delta:
        raise ValueError(
            f"{entry.kind} {entry.reference!r} was already written with deltas "
            f"{number_text(entry.available_delta)}/{number_text(entry.held_delta)}; "
            f"the replay asks for {number_text(available_delta)}/{number_text(held_delta)}."
        )


# --- Locking --------------------------------------------------------------------------------------------


def account_for_update(*, company_id: CompanyId, code: str) -> Account:
    """The company's account in `code`, row-locked until the surrounding transaction ends; created if missing.

    Must run inside `transaction.atomic`: outside one the lock would be gone before the caller used it.
    """
    code = get_asset(code).code
    if not transaction.get_connection().in_atomic_block:
        raise transaction.TransactionManagementError(
            "account_for_update must run inside transaction.atomic: the row lock lasts until commit."
        )
    locked = Account.objects.select_for_update()
    account = locked.filter(company_id=company_id, code=code).first()
    if account is not None:
        return account
    try:
        # Savepoint: on PostgreSQL a concurrent first credit may insert the same (company, code); our insert
        # then waits for it and fails on the unique constraint, and only this savepoint is rolled back.
        with transaction.atomic():
            return Account.objects.create(company_id=company_id, code=code, available=_ZERO, held=_ZERO)
    except IntegrityError:
        # The other transaction has committed its row by now (our insert waited for it): lock that one.
        account = locked.filter(company_id=company_id, code=code).first()
        if account is None:
            raise  # not the unique race (e.g. an unknown company): let the real error out
        return account


# --- Writing --------------------------------------------------------------------------------------------


def _existing(account: Account, kind: str, reference: str) -> LedgerEntry | None:
    # Read under the account lock: a concurrent replay of the same reference has committed or not started.
    return LedgerEntry.objects.filter(account=account, kind=kind, reference=reference).first()


def _append(
    account: Account, *, kind: str, reference: str, available_delta: Decimal, held_delta: Decimal
) -> LedgerEntry:
    with decimal.localcontext(MONEY_CONTEXT):  # exact: the default 28 digits could round a 36-digit balance
        account.available += available_delta
        account.held += held_delta
    # The CHECK constraints (available >= 0, held >= 0) back every check made above this point.
    account.save(update_fields=["available", "held", "updated_at"])
    return LedgerEntry.objects.create(
        account=account,
        kind=kind,
        available_delta=available_delta,
        held_delta=held_delta,
        reference=reference,
    )


def ledger_credit(
    *, company_id: CompanyId, code: str, amount: Decimal, kind: str, reference: str
) -> LedgerEntry:
    """available += amount. A replayed (kind, reference) returns the first entry: a deposit credits once."""
    return ledger_credit_many([Credit(company_id, code, amount, kind, reference)])[0]


@dataclass(frozen=True)
class Credit:
    company_id: CompanyId
    code: str
    amount: Decimal
    kind: str
    reference: str


@transaction.atomic
def ledger_credit_many(credits: Sequence[Credit]) -> list[LedgerEntry]:
    """`ledger_credit` for many credits at once (a batch of confirmed deposits): every account locked once,
    in one order, one entry each, replays returned as written. Returns the entries in the order given."""
    items: list[Credit] = []
    seen: set[tuple[str, str, str, str]] = set()
    for credit in credits:
        if credit.kind not in CREDIT_KINDS:
            raise ValueError(f"{credit.kind!r} is not a credit kind; use one of {sorted(CREDIT_KINDS)}.")
        asset = get_asset(credit.code)
        _require_amount(credit.amount, asset)
        _require_reference(credit.reference)
        once = (str(credit.company_id), asset.code, credit.kind, credit.reference)
        if once in seen:
            raise ValueError(f"{credit.kind} {credit.reference!r} appears twice in one batch of credits.")
        seen.add(once)
        items.append(Credit(credit.company_id, asset.code, credit.amount, credit.kind, credit.reference))
    if not items:
        return []
    # Deadlock avoidance: accounts are locked in one (company, code) order by every batch.
    accounts = {
        key: account_for_update(company_id=key[0], code=key[1])
        for key in sorted({(str(item.company_id), item.code) for item in items})
    }
    replayed = _replayed(accounts.values(), {item.kind for item in items}, {item.reference for item in items})
    fresh: list[LedgerEntry] = []
    for item in items:
        account = accounts[str(item.company_id), item.code]
        done = replayed.get((account.pk, item.kind, item.reference))
        if done is not None:
            _require_replay_matches(done, item.amount, _ZERO)
            continue
        with decimal.localcontext(MONEY_CONTEXT):
            account.available += item.amount
        fresh.append(
            LedgerEntry(
                account=account,
                kind=item.kind,
                available_delta=item.amount,
                held_delta=_ZERO,
                reference=item.reference,
            )
        )
    credited = {entry.account_id for entry in fresh}
    for account in accounts.values():
        if account.pk in credited:
            account.save(update_fields=["available", "held", "updated_at"])
    created = iter(bulk_insert(fresh))
    entries = []
    for item in items:
        account = accounts[str(item.company_id), item.code]
        entries.append(replayed.get((account.pk, item.kind, item.reference)) or next(created))
    return entries


@transaction.atomic
def ledger_hold(*, company_id: CompanyId, code: str, amount: Decimal, reference: str) -> LedgerEntry:
    """available -> held (a withdrawal accepted). InsufficientBalance when available < amount."""
    asset = get_asset(code)
    _require_amount(amount, asset)
    _require_reference(reference)
    account = account_for_update(company_id=company_id, code=asset.code)

    done = _existing(account, Kind.WITHDRAWAL_HOLD, reference)
    # copy_negate, not unary minus: minus rounds to the context's 28 digits, a 36-digit amount would change.
    if done is not None:
        _require_replay_matches(done, amount.copy_negate(), amount)
        return done
    if account.available < amount:
        raise InsufficientBalance(shortfalls=[Shortfall(asset.code, account.available, amount)])
    return _append(
        account,
        kind=Kind.WITHDRAWAL_HOLD,
        reference=reference,
        available_delta=amount.copy_negate(),
        held_delta=amount,
    )


def ledger_hold_many(
    *, company_id: CompanyId, holds: Holds, locked: Mapping[str, Account] | None = None
) -> list[LedgerEntry]:
    """Hold every (code, amount, reference) or none: a bulk withdrawal of up to 1000 items, one transaction.

    Returns the entries in the order of `holds`. Every short code is named in one InsufficientBalance.
    `locked`: the company's accounts by code, already locked by the caller in this transaction (with
    `account_for_update`, in code order), so they are not read and locked a second time. With them it runs
    in the caller's transaction without a savepoint of its own (two round trips fewer on the withdrawal
    path): every check comes before any write, and an error fails the caller's whole transaction.
    """
    if locked is None:
        with transaction.atomic():
            return ledger_hold_many(company_id=company_id, holds=holds, locked={})
    entries = _hold_many(company_id, holds, locked, fresh=False)
    bulk_insert([entry for entry in entries if entry.pk is None])  # sets the new entries' keys
    return entries


def _hold_many(
    company_id: CompanyId, holds: Holds, locked: Mapping[str, Account], *, fresh: bool
) -> list[LedgerEntry]:
    """The entries of `holds` in order: replays as first written, new ones unsaved; the accounts saved."""
    if not transaction.get_connection().in_atomic_block:
        raise transaction.TransactionManagementError("locked accounts exist only inside a transaction")
    items: list[tuple[str, Decimal, str]] = []
    seen: set[tuple[str, str]] = set()
    for raw_code, amount, reference in holds:
        asset = get_asset(raw_code)
        _require_amount(amount, asset)
        _require_reference(reference)
        if (asset.code, reference) in seen:
            raise ValueError(f"Reference {reference!r} appears twice for {asset.code} in one bulk hold.")
        seen.add((asset.code, reference))
        items.append((asset.code, amount, reference))
    if not items:
        return []

    # Deadlock avoidance: every caller locks its accounts in the same (sorted code) order, so two bulk
    # requests touching btc and eth never each hold one lock while waiting for the other's.
    accounts = {
        code: _still_locked(locked, company_id, code) or account_for_update(company_id=company_id, code=code)
        for code in sorted({code for code, _, _ in items})
    }
    replayed = {} if fresh else _replayed(accounts.values(), {Kind.WITHDRAWAL_HOLD}, {r for *_, r in items})

    entries: list[LedgerEntry] = []
    requested: dict[str, Decimal] = {}
    with decimal.localcontext(MONEY_CONTEXT):
        for code, amount, reference in items:
            entry = replayed.get((accounts[code].pk, Kind.WITHDRAWAL_HOLD, reference))
            if entry is not None:
                _require_replay_matches(entry, amount.copy_negate(), amount)
            else:
                requested[code] = requested.get(code, _ZERO) + amount
                entry = LedgerEntry(account=accounts[code], kind=Kind.WITHDRAWAL_HOLD, reference=reference)
                entry.available_delta, entry.held_delta = amount.copy_negate(), amount
            entries.append(entry)
    # All checks before any write: one short code refuses the whole batch.
    shortfalls = [
        Shortfall(code, accounts[code].available, total)
        for code, total in sorted(requested.items())
        if accounts[code].available < total
    ]
    if shortfalls:
        raise InsufficientBalance(shortfalls=shortfalls)

    for code, total in requested.items():
        account = accounts[code]
        with decimal.localcontext(MONEY_CONTEXT):
            account.available -= total
            account.held += total
        account.save(update_fields=["available", "held", "updated_at"])
    return entries


def _still_locked(locked: Mapping[str, Account] | None, company_id: CompanyId, code: str) -> Account | None:
    """The caller's locked account of `code`, when it passed one (and it is this company's)."""
    account = (locked or {}).get(code)
    if account is not None and (str(account.company_id) != str(company_id) or account.code != code):
        raise ValueError(f"the locked account passed for {code} is not company {company_id}'s {code} account")
    return account


def _replayed(
    accounts: Iterable[Account], kinds: set[str], references: set[str]
) -> dict[tuple[int, str, str], LedgerEntry]:
    """The entries already written for these (account, kind, reference)s, by that triple: what a batch
    replays instead of writing again."""
    return {
        (entry.account_id, entry.kind, entry.reference): entry
        for entry in LedgerEntry.objects.filter(
            account__in=list(accounts), kind__in=kinds, reference__in=references
        )
    }


def _settle(*, company_id: CompanyId, code: str, amount: Decimal, reference: str, kind: str) -> LedgerEntry:
    """Release or post the hold written under the same reference; each hold is settled exactly once."""
    asset = get_asset(code)
    _require_amount(amount, asset)
    _require_reference(reference)
    account = account_for_update(company_id=company_id, code=asset.code)
    available_delta = amount if kind == Kind.WITHDRAWAL_RELEASE else _ZERO

    entries = {
        entry.kind: entry
        for entry in LedgerEntry.objects.filter(
            account=account,
            reference=reference,
            kind__in=[Kind.WITHDRAWAL_HOLD, Kind.WITHDRAWAL_RELEASE, Kind.WITHDRAWAL_POST],
        )
    }
    done = entries.get(kind)
    if done is not None:
        _require_replay_matches(done, available_delta, amount.copy_negate())
        return done  # a retried task settles once
    hold = entries.get(Kind.WITHDRAWAL_HOLD)
    if hold is None or hold.held_delta != amount:
        # Without this, releasing or posting a hold that is not there would spend other withdrawals' holds.
        raise ValueError(f"No hold of {number_text(amount)} {asset.code} under {reference!r} to settle.")
    other = entries.get(Kind.WITHDRAWAL_POST if kind == Kind.WITHDRAWAL_RELEASE else Kind.WITHDRAWAL_RELEASE)
    if other is not None:
        raise ValueError(f"The hold {reference!r} is already settled ({other.kind}).")
    return _append(
        account,
        kind=kind,
        reference=reference,
        available_delta=available_delta,
        held_delta=amount.copy_negate(),
    )


@transaction.atomic
def ledger_release(*, company_id: CompanyId, code: str, amount: Decimal, reference: str) -> LedgerEntry:
    """held -> available (a withdrawal rejected). Settles the hold written under the same reference."""
    return _settle(
        company_id=company_id, code=code, amount=amount, reference=reference, kind=Kind.WITHDRAWAL_RELEASE
    )


@transaction.atomic
def ledger_post(*, company_id: CompanyId, code: str, amount: Decimal, reference: str) -> LedgerEntry:
    """held leaves (a withdrawal done). Settles the hold written under the same reference."""
    return _settle(
        company_id=company_id, code=code, amount=amount, reference=reference, kind=Kind.WITHDRAWAL_POST
    )


# --- Checking -------------------------------------------------------------------------------------------


def ledger_verify() -> list[str]:
    """Every account against the sums of its entries; one line per account that differs (empty: clean).

    One aggregate query, so the accounts and the sums come from the same snapshot and a write committing
    meanwhile cannot show up as a false mismatch; MoneySum is exact on SQLite too (core.fields).
    """
    accounts = (
        Account.objects.annotate(
            entries_available=MoneySum("entries__available_delta"),
            entries_held=MoneySum("entries__held_delta"),
        )
        .order_by("company_id", "code")
        .values_list("pk", "company_id", "code", "available", "held", "entries_available", "entries_held")
    )
    return [
        problem
        for pk, company_id, code, available, held, summed_available, summed_held in accounts
        if (
            problem := _mismatch(
                pk, company_id, code, available, held, summed_available or _ZERO, summed_held or _ZERO
            )
        )
    ]


def _mismatch(
    pk: int,
    company_id: UUID,
    code: str,
    available: Decimal,
    held: Decimal,
    summed_available: Decimal,
    summed_held: Decimal,
) -> str:
    differences = [
        f"{name} {number_text(value)} != entries {number_text(total)}"
        for name, value, total in (("available", available, summed_available), ("held", held, summed_held))
        if value != total
    ]
    return f"account {pk} (company {company_id}, {code}): " + ", ".join(differences) if differences else ""
