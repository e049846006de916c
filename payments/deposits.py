"""Deposit ingestion: idempotent on (code, txid, output index), routed by (address, tag) to its owner.

Owners register a handler per `DepositAddress.Owner` (static addresses here, invoices from the invoices
app), so payments never imports the apps built on it. Handlers run inside the ingestion transaction, with
the deposit row locked: what they write (ledger entries, status changes, webhook events) commits or rolls
back with it.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Protocol

from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from alerts.services import alert_raise
from chains.addresses import route_key
from chains.base import DROPPED, FAILED, FROZEN, ChainTransfer, TransferKey
from payments.assets import get_asset
from payments.models import Company, Deposit, DepositAddress, QuarantinedTransfer

logger = logging.getLogger(__name__)


class DepositHandler(Protocol):
    def on_seen(self, deposit: Deposit) -> None: ...

    def on_confirmed(self, deposit: Deposit) -> None: ...

    def on_failed(self, deposit: Deposit) -> None: ...  # deposit.status is failed or frozen


_handlers: dict[str, DepositHandler] = {}


def register_deposit_handler(owner: str, handler: DepositHandler) -> None:
    _handlers[owner] = handler


def _handler_for(deposit: Deposit) -> DepositHandler | None:
    if deposit.deposit_address is None:
        return None
    return _handlers.get(deposit.deposit_address.owner)


def _route(transfer: ChainTransfer) -> DepositAddress | None:
    return (
        DepositAddress.objects.filter(**route_lookup(transfer.code, transfer.address, transfer.tag))
        .select_related("company")
        .first()
    )


def route_lookup(code: str, address: str, tag: str | None) -> dict[str, str]:
    """The DepositAddress filter a transfer to (address, tag) routes by, whatever spelling it arrived in."""
    return {"route_key": route_key(code, address), "tag": (tag or "").strip()}


@transaction.atomic
def deposit_ingest(transfer: ChainTransfer) -> Deposit | None:
    """Record or advance one transfer. Seeing the same transfer again changes nothing it already did.

    A transfer reported dropped that was never recorded is not recorded (None): nothing was seen of it.
    """
    asset = get_asset(transfer.code)
    key = {"code": asset.code, "txid": transfer.txid, "output_index": transfer.output_index}
    # of=self: PostgreSQL cannot lock the nullable side of the outer join to deposit_address.
    deposit = (
        Deposit.objects.select_for_update(of=("self",))
        .select_related("deposit_address")
        .filter(**key)
        .first()
    )
    if deposit is None:
        if transfer.state == DROPPED:
            return None
        deposit = _record_new(transfer, key)
        if deposit is None:  # another process recorded it between our read and insert: advance theirs
            deposit = (
                Deposit.objects.select_for_update(of=("self",)).select_related("deposit_address").get(**key)
            )
    if deposit.status != Deposit.Status.SEEN:
        if deposit.status == Deposit.Status.CONFIRMED and transfer.state == DROPPED:
            _reversed(deposit)
        return deposit  # final: a late replay of a confirmed, failed, frozen or dropped transfer does nothing

    handler = _handler_for(deposit)
    if transfer.state in _FAILED_STATES:
        deposit.status = _FAILED_STATES[transfer.state]
        deposit.confirmations = max(transfer.confirmations, 0)
        deposit.save(update_fields=["status", "confirmations", "updated_at"])
        if handler:
            handler.on_failed(deposit)
        return deposit
    reached = transfer.confirmations >= asset.confirmations
    height, block_hash = (transfer.block.height, transfer.block.hash) if transfer.block else (None, "")
    moved = (height, block_hash) != (deposit.block_height, deposit.block_hash)
    if transfer.confirmations == deposit.confirmations and not reached and not moved:
        return deposit  # nothing new: no write
    deposit.confirmations = transfer.confirmations
    deposit.block_height, deposit.block_hash = height, block_hash
    fields = ["confirmations", "block_height", "block_hash", "updated_at"]
    if reached:
        deposit.status = Deposit.Status.CONFIRMED
        deposit.confirmed_at = timezone.now()
        deposit.save(update_fields=[*fields, "status", "confirmed_at"])
        if handler:
            handler.on_confirmed(deposit)
    else:
        deposit.save(update_fields=fields)
    return deposit


_FAILED_STATES = {
    FAILED: Deposit.Status.FAILED,
    FROZEN: Deposit.Status.FROZEN,
    DROPPED: Deposit.Status.DROPPED,
}


def _reversed(deposit: Deposit) -> None:
    """A credited deposit the chain no longer holds: never debited automatically; a person decides."""
    alert_raise(
        kind="deposit_reversed",
        key=f"{deposit.code}:{deposit.txid}:{deposit.output_index}",
        message=(
            f"credited deposit {deposit.code} {deposit.txid}:{deposit.output_index} of {deposit.amount} "
            f"(company {deposit.company_id}) is no longer on the chain after a reorg or double-spend; "
            "the ledger was not changed"
        ),
    )


def _record_new(transfer: ChainTransfer, key: dict[str, object]) -> Deposit | None:
    owner = _route(transfer)
    company: Company | None
    if owner is not None and owner.code != key["code"]:
        # The address is ours but for another asset (e.g. ETH sent to a USDC address): recorded against the
        # company for a person to look at, never credited as the wrong asset.
        logger.warning(
            "deposit %s of %s reached %s address %s", transfer.txid, key["code"], owner.code, owner
        )
        company, owner = owner.company, None
    else:
        company = owner.company if owner else None
    try:
        with transaction.atomic():
            deposit = Deposit.objects.create(
                **key,
                address=transfer.address,
                tag=transfer.tag or "",
                from_address=transfer.from_address,
                amount=transfer.amount,
                confirmations=0,
                block_height=transfer.block.height if transfer.block else None,
                block_hash=transfer.block.hash if transfer.block else "",
                deposit_address=owner,
                company=company,
            )
    except IntegrityError:
        return None
    if owner is None:
        logger.info("deposit %s to unknown address %s recorded", transfer.txid, transfer.address)
    handler = _handler_for(deposit)
    if handler:
        handler.on_seen(deposit)
    return deposit


# A transfer whose ingestion raised waits this long before its next try, doubling up to the cap.
QUARANTINE_FIRST_PAUSE = timedelta(minutes=1)
QUARANTINE_MAX_PAUSE = timedelta(hours=1)


def deposits_ingest(code: str, transfers: list[ChainTransfer]) -> int:
    """Ingest each transfer of one code in its own transaction; returns how many were ingested.

    One transfer that cannot be ingested (a bug, a value the ledger refuses) is quarantined and the others
    go on: it must never hold back every later payment of the chain. A database outage is not a bad
    transfer: it propagates, and the next scan tries again.
    """
    if not transfers:
        return 0
    quarantined = {(row.txid, row.output_index): row for row in QuarantinedTransfer.objects.filter(code=code)}
    now = timezone.now()
    ingested = 0
    for transfer in transfers:
        held = quarantined.get((transfer.txid, transfer.output_index))
        if held is not None and held.retry_at > now:
            continue
        try:
            deposit_ingest(transfer)
        except (OperationalError, InterfaceError):
            raise
        except Exception as exc:
            _quarantine(transfer, held, exc)
            continue
        ingested += 1
        if held is not None:
            held.delete()
            logger.info("quarantined transfer %s %s:%s ingested", code, transfer.txid, transfer.output_index)
    return ingested


def open_transfer_keys(code: str) -> set[TransferKey]:
    """Transfers of `code` still to follow: deposits not final yet, and quarantined ones due for a retry."""
    open_deposits = Deposit.objects.filter(code=code, status=Deposit.Status.SEEN).values_list(
        "txid", "output_index"
    )
    due = QuarantinedTransfer.objects.filter(code=code, retry_at__lte=timezone.now()).values_list(
        "txid", "output_index"
    )
    return {TransferKey(code, txid, index) for txid, index in [*open_deposits, *due]}


def _quarantine(transfer: ChainTransfer, held: QuarantinedTransfer | None, exc: Exception) -> None:
    attempts = held.attempts + 1 if held is not None else 1
    now = timezone.now()
    pause = min(QUARANTINE_FIRST_PAUSE * 2 ** min(attempts - 1, 16), QUARANTINE_MAX_PAUSE)
    logger.error(
        "transfer quarantined: %s %s:%s (attempt %s, next try in %ss): %r",
        transfer.code,
        transfer.txid,
        transfer.output_index,
        attempts,
        int(pause.total_seconds()),
        exc,
        exc_info=exc,
    )
    QuarantinedTransfer.objects.update_or_create(
        code=transfer.code,
        txid=transfer.txid,
        output_index=transfer.output_index,
        defaults={
            "error": f"{type(exc).__name__}: {exc}"[:2000],
            "attempts": attempts,
            "last_failed_at": now,
            "retry_at": now + pause,
        },
    )
