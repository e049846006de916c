"""Readings of the payout (hot) wallets: what each can spend, stored for `/metrics`.

Beat's payout monitor reads every offered code once per `WITHDRAWAL_POLL_SECONDS` (withdrawals.payouts),
so a scrape never calls a node. A node that cannot be asked leaves the last reading in place; its age
(`read_at`) tells the operator how old it is. The sandbox's wallet is bottomless and is not stored, and
the reading of a code that is no longer served goes. With each reading the backend checks what else its
payouts and sweeps draw on (`check_resources`: TRON's resource account) and raises its alerts.
"""

from __future__ import annotations

import logging
from decimal import Decimal

from django.utils import timezone

from chains.backend import get_backend
from chains.base import ChainUnavailable
from chains.models import PayoutWallet

logger = logging.getLogger(__name__)


def payout_wallets_read(codes: list[str]) -> None:
    """Read the payout wallet of each of `codes`, each on its own (one failing node never stops the others),
    and forget the readings of every other code."""
    for code in codes:
        try:
            payout_wallet_read(code)
        except Exception:
            logger.exception("reading the payout wallet of %s failed; the other codes go on", code)
    PayoutWallet.objects.exclude(code__in=codes).delete()


def wallet_reading(code: str) -> tuple[Decimal, Decimal | None]:
    """What the payout wallet of `code` can spend now, and on account chains the hot address's gas money
    (None elsewhere), asked of the node; ChainUnavailable when it cannot be asked."""
    backend = get_backend(code)
    return backend.spendable(code), backend.gas_tank(code) if backend.has_gas_tank else None


def payout_wallet_read(code: str) -> PayoutWallet | None:
    """Read the payout wallet of `code` from its node and store it; None when there is nothing to store
    (a bottomless sandbox wallet, or the node cannot be asked now)."""
    try:
        balance, gas_tank = wallet_reading(code)
    except ChainUnavailable as exc:
        logger.info("payout wallet of %s not read: %s", code, exc)
        return None
    if not balance.is_finite():
        PayoutWallet.objects.filter(code=code).delete()  # moved to the sandbox: nothing to show
        return None
    wallet, _ = PayoutWallet.objects.update_or_create(
        code=code, defaults={"balance": balance, "gas_tank": gas_tank, "read_at": timezone.now()}
    )
    try:
        get_backend(code).check_resources(code)  # what payouts and sweeps draw on beside this wallet
    except ChainUnavailable as exc:
        logger.info("resources of %s not checked: %s", code, exc)
    return wallet
