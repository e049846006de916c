"""The ledger: the only place a balance changes (docs/architecture.md).

Every change locks the `Account` row (`select_for_update`, or the conditional UPDATE of the one-statement
hold) inside a transaction, changes `available`/`held` and appends exactly one `LedgerEntry` carrying the
deltas, so each account always equals the sum of its entries (`ledger_verify`). Entries are never updated
or deleted; a correction is a new entry.

- `entries`: credits, holds, releases, posts; idempotent per (account, kind, reference).
- `numbered`: holds numbered from a caller's counter row and written with the caller's rows, the one way a
  withdrawal is accepted; its single-statement forms (`_statement`) are private to this package: no caller
  writes SQL for the ledger.
"""

from payments.ledger.entries import (
    CREDIT_KINDS,
    CompanyId,
    Credit,
    InsufficientBalance,
    Kind,
    Shortfall,
    account_for_update,
    ledger_credit,
    ledger_credit_many,
    ledger_hold,
    ledger_hold_many,
    ledger_post,
    ledger_release,
    ledger_verify,
)
from payments.ledger.numbered import Numbered, Numbering, ledger_hold_numbered

__all__ = [
    "CREDIT_KINDS",
    "CompanyId",
    "Credit",
    "InsufficientBalance",
    "Kind",
    "Numbered",
    "Numbering",
    "Shortfall",
    "account_for_update",
    "ledger_credit",
    "ledger_credit_many",
    "ledger_hold",
    "ledger_hold_many",
    "ledger_hold_numbered",
    "ledger_post",
    "ledger_release",
    "ledger_verify",
]
