"""Credited deposits a reorganisation took back, and brought back.

A confirmed deposit stays confirmed and credited whatever the chain does later: the merchant may have
delivered already, so a person decides (the `deposit_reversed` alert). What is recorded is when it left the
chain (`reversed_at`, shown by `chain status` and `/metrics`), so the alert is raised once per reversal, and
resolved when the chain mines it again. Found by ingestion (a recheck reports it dropped) and by the settled
watch (chains.settled).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from alerts.services import alert_raise, alert_resolve
from chains.base import BlockRef
from notifications.events import notify_deposit_reversed
from payments.models import Deposit

logger = logging.getLogger(__name__)


@transaction.atomic
def deposit_reverse(*, deposit_id: int) -> Deposit:
    """A credited deposit the chain no longer holds (a reorganisation or double-spend took it back)."""
    deposit = Deposit.objects.select_for_update().get(pk=deposit_id)
    deposit_mark_reversed(deposit)
    return deposit


def deposit_mark_reversed(deposit: Deposit) -> None:
    """Marked and a person told, once per reversal (not on every check); never debited automatically: the
    merchant may have delivered already, so a person decides. The row is locked by the caller."""
    if deposit.status != Deposit.Status.CONFIRMED or deposit.reversed_at is not None:
        return
    deposit.reversed_at = timezone.now()
    deposit.save(update_fields=["reversed_at", "updated_at"])
    alert_raise(
        kind="deposit_reversed",
        key=_reversed_key(deposit),
        message=(
            f"credited deposit {deposit.code} {deposit.txid}:{deposit.output_index} of {deposit.amount} "
            f"(company {deposit.company_id}) is no longer on the chain after a reorg or double-spend; "
            "the ledger was not changed"
        ),
    )
    notify_deposit_reversed(deposit)  # the company's members, by e-mail, same commit


@transaction.atomic
def deposit_remined(*, deposit_id: int, block: BlockRef) -> Deposit:
    """A credited deposit found in another block than recorded (a reorganisation mined it again): that
    block is recorded; if it was reversed, it is back and its alert resolved."""
    deposit = Deposit.objects.select_for_update().get(pk=deposit_id)
    if deposit.status != Deposit.Status.CONFIRMED:
        return deposit
    remined(deposit, block, kind="deposit_reversed", key=_reversed_key(deposit))
    return deposit


def remined(row: Any, block: BlockRef, *, kind: str, key: str) -> None:
    """A settled row (a deposit, a payout transaction; locked by the caller) found mined in `block`: its
    block recorded, and if it was reversed, it is back and its alert of `kind` resolved."""
    was_reversed = row.reversed_at is not None
    row.block_height, row.block_hash, row.reversed_at = block.height, block.hash, None
    row.save(update_fields=["block_height", "block_hash", "reversed_at", "updated_at"])
    if was_reversed:
        logger.warning("%s %s is mined again at %s after it was reversed", kind, key, block.height)
        alert_resolve(kind=kind, key=key)


def _reversed_key(deposit: Deposit) -> str:
    return f"{deposit.code}:{deposit.txid}:{deposit.output_index}"
