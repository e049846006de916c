"""What chains needs to know about payouts, asked of the app that keeps them (withdrawals registers its book
at start-up), so chains never imports the withdrawals that sit on top of it.

The chain status counts the payouts waiting to be sent, the house's fee report the payouts done and the
fees charged for them, and the EVM signer checks a payout against the stored withdrawal before it signs.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from core.money import number_text


@dataclass(frozen=True)
class PayoutFacts:
    """A stored payout as the signer checks it: where to, how much, and whether it may be sent now."""

    uid: str
    to_address: str
    amount: Decimal
    processing: bool  # accepted, planned, not finished: the only state in which it may be signed
    status: str
    paid_by_other_nonce: bool  # a live transaction of another nonce pays it already
    tag: str = ""  # the destination tag or memo (TON: the text comment)
    # Its payment bounced once (TON) and a person approved sending it again non-bounceable.
    bounced: bool = False


class PayoutBook(Protocol):
    def waiting_total(self, code: str) -> Decimal:
        """The amount of the code's payouts accepted and not yet sent."""
        ...

    def done(self, code: str) -> tuple[int, Decimal]:
        """How many of the code's payouts are done, and the network fees charged for them."""
        ...

    def payout(self, code: str, reference: str, nonce: int) -> PayoutFacts | None:
        """The payout the reference names, of this code; None if there is none."""
        ...


_book: PayoutBook | None = None


def register(book: PayoutBook) -> None:
    global _book
    _book = book


def payable(code: str, ref: str, refused: type[Exception], *, nonce: int = -1) -> PayoutFacts:
    """The stored payout `ref` of `code`, when a signer may pay it now: it exists, is processing, and no live
    transaction pays it already (`nonce` -1, chains without nonces: ChainTx.nonce is never negative, so
    every live transaction of the withdrawal counts as another's and a paid one is never signed again); else
    `refused` (the family's SignRefused) with why."""
    payout = book().payout(code, ref, nonce)
    if payout is None:
        raise refused(f"no withdrawal {ref!r} of {code}")
    if not payout.processing:
        raise refused(f"withdrawal {payout.uid} is {payout.status}, not processing")
    if payout.paid_by_other_nonce:
        raise refused(f"withdrawal {payout.uid} is paid by a transaction already")
    return payout


def within_limit(payout: PayoutFacts, code: str, limit: Decimal | None, refused: type[Exception]) -> None:
    """`refused` when the payout is over the code's `payout_limit` (None: no limit); a day's total is each
    signer's journal's."""
    if limit is not None and payout.amount > limit:
        raise refused(f"{number_text(payout.amount)} {code} is over the payout limit {number_text(limit)}")


def book() -> PayoutBook:
    """The registered book. None registered is a broken deployment, not "no payouts": a chain status that
    showed nothing waiting, or a signer that found no payout, would hide it."""
    if _book is None:
        raise ImproperlyConfigured("No payout book is registered: the withdrawals app must be installed.")
    return _book
