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


def book() -> PayoutBook:
    """The registered book. None registered is a broken deployment, not "no payouts": a chain status that
    showed nothing waiting, or a signer that found no payout, would hide it."""
    if _book is None:
        raise ImproperlyConfigured("No payout book is registered: the withdrawals app must be installed.")
    return _book
