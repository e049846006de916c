"""Deposit ingestion: idempotent on (code, txid, output index), routed by (address, tag) to its owner.

Owners register a handler per `DepositAddress.Owner` (static addresses here, invoices from the invoices
app), so payments never imports the apps built on it. Handlers run inside the ingestion transaction, with
the deposit row locked: what they write (ledger entries, status changes, webhook events) commits or rolls
back with it.

A scan's transfers are ingested in batches (`deposits_ingest`): one transaction per batch, new transfers
routed, recorded and confirmed with a few set-based statements, and handlers offering `on_seen_many` /
`on_confirmed_many` called once per batch. A batch that raises is rolled back whole and ingested again
one transfer per transaction (`deposit_ingest`), so one bad transfer is quarantined alone.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal
from typing import Protocol

from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from chains.addresses import route_key
from chains.base import DROPPED, FAILED, FROZEN, ChainTransfer, TransferKey
from chains.deposit_reversals import deposit_mark_reversed
from core import metrics
from core.assets import Asset, get_asset
from core.bulkinsert import bulk_insert
from core.money import check_range, decimal_places
from payments.models import Company, Deposit, DepositAddress, QuarantinedTransfer

logger = logging.getLogger(__name__)


class DepositHandler(Protocol):
    def on_seen(self, deposit: Deposit) -> None: ...

    def on_confirmed(self, deposit: Deposit) -> None: ...

    def on_failed(self, deposit: Deposit) -> None: ...  # deposit.status is failed or frozen


_handlers: dict[str, DepositHandler] = {}
UNROUTED = "unrouted"  # the handler of deposits no address owns (chains.unrouted)

INGEST_LOCK = 0x6B617373  # the advisory lock class of deposit ingestion ("kass"), keyed by code


def register_deposit_handler(owner: str, handler: DepositHandler) -> None:
    _handlers[owner] = handler


def deposit_address_awaits_payment(address: DepositAddress) -> bool:
    """Whether the owner of `address` still waits for a payment to it (an invoice that is not final): a
    chain that deletes a swept deposit account (NEAR) leaves such an address alone. Owners without the
    notion (static addresses: always open, and a late payment makes the account again) say no."""
    awaits = getattr(_handlers.get(address.owner), "awaits_payment", None)
    return bool(awaits(address)) if awaits is not None else False


def _handler_for(deposit: Deposit) -> DepositHandler | None:
    return _handlers.get(deposit.deposit_address.owner if deposit.deposit_address else UNROUTED)


def deposit_route_to(deposit: Deposit, owner: DepositAddress) -> None:
    """A person routed a confirmed deposit no address owned (chains.unrouted) to `owner`: its handler hears
    it seen, then confirmed, in the caller's transaction, as if the transfer had reached it."""
    assert deposit.deposit_address_id is None and deposit.status == Deposit.Status.CONFIRMED
    deposit.deposit_address, deposit.company = owner, owner.company
    deposit.save(update_fields=["deposit_address", "company", "updated_at"])
    handler = _handlers[owner.owner]
    handler.on_seen(deposit)
    handler.on_confirmed(deposit)


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
    _ingesting(asset.code)
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
    _advance(deposit, transfer)
    return deposit


def _ingesting(code: str) -> None:
    """Ingestion of one code, one transaction at a time (PostgreSQL: a lock held until this commit).

    A replay (the next scan after a worker was killed, a second scanner) is normal: it must find what the
    first one recorded and advance it. Without this it could read before the first one commits, then have its
    insert fail on the unique key (a duplicate-key ERROR in the database's log and a batch retried one by
    one). SQLite runs one writing transaction at a time already."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [INGEST_LOCK, code])


def _advance(deposit: Deposit, transfer: ChainTransfer) -> None:
    """Move a recorded deposit (row-locked) to what the chain now reports of its transfer."""
    if deposit.status != Deposit.Status.SEEN:
        if deposit.status == Deposit.Status.CONFIRMED and transfer.state == DROPPED:
            deposit_mark_reversed(deposit)
        return  # final: a late replay of a confirmed, failed, frozen or dropped transfer does nothing

    handler = _handler_for(deposit)
    if transfer.state in _FAILED_STATES:
        deposit.status = _FAILED_STATES[transfer.state]
        deposit.confirmations = max(transfer.confirmations, 0)
        deposit.save(update_fields=["status", "confirmations", "updated_at"])
        if handler:
            handler.on_failed(deposit)
        return
    reached = is_final(transfer, get_asset(deposit.code).confirmations)
    height, block_hash = (transfer.block.height, transfer.block.hash) if transfer.block else (None, "")
    moved = (height, block_hash) != (deposit.block_height, deposit.block_hash)
    if transfer.confirmations == deposit.confirmations and not reached and not moved:
        return  # nothing new: no write
    deposit.confirmations = transfer.confirmations
    deposit.block_height, deposit.block_hash = height, block_hash
    fields = ["confirmations", "block_height", "block_hash", "updated_at"]
    if reached:
        deposit.status = Deposit.Status.CONFIRMED
        deposit.confirmed_at = timezone.now()
        deposit.save(update_fields=[*fields, "status", "confirmed_at"])
        metrics.deposits_confirmed(deposit.code)
        if handler:
            handler.on_confirmed(deposit)
    else:
        deposit.save(update_fields=fields)


def is_final(transfer: ChainTransfer, confirmations: int) -> bool:
    """The chain holds `transfer` for good: by its own signal where its backend reports one (`final`),
    else at `confirmations` (the asset's count)."""
    return transfer.confirmations >= confirmations if transfer.final is None else transfer.final


_FAILED_STATES = {
    FAILED: Deposit.Status.FAILED,
    FROZEN: Deposit.Status.FROZEN,
    DROPPED: Deposit.Status.DROPPED,
}


def _record_new(transfer: ChainTransfer, key: dict[str, object]) -> Deposit | None:
    deposit = _new_deposit(transfer, str(key["code"]), _route(transfer), confirmations=0)
    try:
        with transaction.atomic():
            deposit.save(force_insert=True)
    except IntegrityError:
        return None
    metrics.deposits_seen(deposit.code)
    handler = _handler_for(deposit)
    if handler:
        handler.on_seen(deposit)
    return deposit


def _new_deposit(
    transfer: ChainTransfer, code: str, owner: DepositAddress | None, *, confirmations: int
) -> Deposit:
    """The row a first-seen transfer is recorded as, owned by `owner` when the address is ours for `code`."""
    _require_carried(transfer, get_asset(code))
    company: Company | None
    if owner is not None and owner.code != code:
        # The address is ours but for another asset (e.g. ETH sent to a USDC address): recorded against the
        # company for a person to look at, never credited as the wrong asset.
        logger.warning("deposit %s of %s reached %s address %s", transfer.txid, code, owner.code, owner)
        company, owner = owner.company, None
    else:
        company = owner.company if owner else None
    if owner is None:
        logger.info("deposit %s to unknown address %s recorded", transfer.txid, transfer.address)
    return Deposit(
        code=code,
        txid=transfer.txid,
        output_index=transfer.output_index,
        address=transfer.address,
        tag=transfer.tag or "",
        from_address=transfer.from_address,
        amount=transfer.amount,
        confirmations=confirmations,
        block_height=transfer.block.height if transfer.block else None,
        block_hash=transfer.block.hash if transfer.block else "",
        deposit_address=owner,
        company=company,
    )


def _require_carried(transfer: ChainTransfer, asset: Asset) -> None:
    """An amount the asset cannot carry (more places than its chain has, zero, negative, not a number) is a
    node's nonsense answer: refused before anything is recorded, so the transfer is quarantined for a person
    like any other one that cannot be ingested, never stored as a deposit nobody is credited for."""
    amount = transfer.amount
    if not isinstance(amount, Decimal) or not amount.is_finite() or amount <= 0:
        raise ValueError(f"the node reported {amount!r} for {asset.code}: not a positive amount")
    if decimal_places(amount) > asset.amount_decimals:
        raise ValueError(
            f"the node reported {amount} {asset.code}: more than the {asset.amount_decimals} decimal places "
            f"{asset.code} carries"
        )
    check_range(amount)


# --- batches ---------------------------------------------------------------------------------------------

# Transfers ingested per transaction by `deposits_ingest`.
INGEST_BATCH = 1000


@transaction.atomic
def _ingest_batch(code: str, transfers: list[ChainTransfer]) -> None:
    """Ingest `transfers` of one code in one transaction, new ones set-based; the same as `deposit_ingest`
    for each, in order, except that every new transfer is seen before any is confirmed."""
    asset = get_asset(code)
    _ingesting(asset.code)
    batch: dict[TransferKey, ChainTransfer] = {}
    again: list[ChainTransfer] = []  # a key reported twice in one scan: its later reports one by one
    for transfer in transfers:
        if transfer.key in batch:
            again.append(transfer)
        else:
            batch[transfer.key] = transfer
    recorded = {
        (deposit.txid, deposit.output_index): deposit
        for deposit in Deposit.objects.select_for_update(of=("self",))
        .select_related("deposit_address")
        .filter(code=asset.code, txid__in={transfer.txid for transfer in batch.values()})
    }
    new: list[ChainTransfer] = []
    for transfer in batch.values():
        deposit = recorded.get((transfer.txid, transfer.output_index))
        if deposit is not None:
            _advance(deposit, transfer)
        elif transfer.state != DROPPED:
            new.append(transfer)
    if new:
        _record_many(asset.code, new)
    for transfer in again:
        deposit_ingest(transfer)


def _record_many(code: str, transfers: list[ChainTransfer]) -> None:
    """Route, record and advance first-seen transfers: one query per step, not per transfer."""
    lookups = [route_lookup(code, transfer.address, transfer.tag) for transfer in transfers]
    keys = [(lookup["route_key"], lookup["tag"]) for lookup in lookups]
    # By tag too: at a shared address (TON's house wallet) every deposit address has the same route key.
    owners = {
        (address.route_key, address.tag): address
        for address in DepositAddress.objects.filter(
            route_key__in={key for key, _ in keys}, tag__in={tag for _, tag in keys}
        )
    }
    companies = Company.objects.in_bulk({address.company_id for address in owners.values()})
    for address in owners.values():
        address.company = companies[address.company_id]  # one instance per company, not one per address
    confirmations = get_asset(code).confirmations
    now = timezone.now()
    deposits: list[Deposit] = []
    failed: list[tuple[Deposit, ChainTransfer]] = []
    reached: list[Deposit] = []
    for transfer, key in zip(transfers, keys, strict=True):
        deposit = _new_deposit(transfer, code, owners.get(key), confirmations=max(transfer.confirmations, 0))
        deposits.append(deposit)
        if transfer.state in _FAILED_STATES:
            failed.append((deposit, transfer))
        elif is_final(transfer, confirmations):
            # Recorded confirmed at once (no second write); its handler still hears seen, then confirmed.
            deposit.status, deposit.confirmed_at = Deposit.Status.CONFIRMED, now
            reached.append(deposit)
    # A concurrent scanner's insert of one of them raises IntegrityError: the batch is retried one by one.
    bulk_insert(deposits)
    metrics.deposits_seen(code, len(deposits))
    _notify(deposits, "on_seen")
    for deposit, transfer in failed:
        _advance(deposit, transfer)
    _notify(reached, "on_confirmed")
    metrics.deposits_confirmed(code, len(reached))


def _notify(deposits: list[Deposit], event: str) -> None:
    """Call each owner's handler for `deposits`: its `<event>_many` once if it has one, else per deposit."""
    by_handler: dict[int, tuple[DepositHandler, list[Deposit]]] = {}
    for deposit in deposits:
        handler = _handler_for(deposit)
        if handler is not None:
            by_handler.setdefault(id(handler), (handler, []))[1].append(deposit)
    for handler, group in by_handler.values():
        many = getattr(handler, f"{event}_many", None)
        if many is not None:
            many(group)
        else:
            for deposit in group:
                getattr(handler, event)(deposit)


# A transfer whose ingestion raised waits this long before its next try, doubling up to the cap.
QUARANTINE_FIRST_PAUSE = timedelta(minutes=1)
QUARANTINE_MAX_PAUSE = timedelta(hours=1)


def deposits_ingest(code: str, transfers: list[ChainTransfer]) -> int:
    """Ingest transfers of one code, `INGEST_BATCH` per transaction; returns how many were ingested.

    One transfer that cannot be ingested (a bug, a value the ledger refuses) is quarantined and the others
    go on: it must never hold back every later payment of the chain. Its batch is rolled back and ingested
    again one transfer per transaction, so only the bad one is held. A database outage is not a bad
    transfer: it propagates, and the next scan tries again.
    """
    if not transfers:
        return 0
    quarantined = {(row.txid, row.output_index): row for row in QuarantinedTransfer.objects.filter(code=code)}
    now = timezone.now()
    due = [
        transfer
        for transfer in transfers
        if (held := quarantined.get((transfer.txid, transfer.output_index))) is None or held.retry_at <= now
    ]
    ingested = 0
    for start in range(0, len(due), INGEST_BATCH):
        batch = due[start : start + INGEST_BATCH]
        try:
            _ingest_batch(code, batch)
        except (OperationalError, InterfaceError):
            raise
        except Exception as exc:
            logger.warning("%s: a batch of %s transfers failed (%r); one by one now", code, len(batch), exc)
            ingested += _ingest_each(batch, quarantined)
            continue
        ingested += len(batch)
        _released(
            [quarantined[t.txid, t.output_index] for t in batch if (t.txid, t.output_index) in quarantined]
        )
    return ingested


def _ingest_each(
    transfers: list[ChainTransfer], quarantined: dict[tuple[str, int], QuarantinedTransfer]
) -> int:
    ingested = 0
    for transfer in transfers:
        held = quarantined.get((transfer.txid, transfer.output_index))
        try:
            deposit_ingest(transfer)
        except (OperationalError, InterfaceError):
            raise
        except Exception as exc:
            _quarantine(transfer, held, exc)
            continue
        ingested += 1
        if held is not None:
            _released([held])
    return ingested


def _released(rows: list[QuarantinedTransfer]) -> None:
    if not rows:
        return
    QuarantinedTransfer.objects.filter(pk__in=[row.pk for row in rows]).delete()
    for row in rows:
        logger.info("quarantined transfer %s %s:%s ingested", row.code, row.txid, row.output_index)


def open_transfer_keys(code: str) -> list[TransferKey]:
    """Transfers of `code` still to follow, oldest first: deposits not final yet (in the order they were
    seen), then quarantined ones due for a retry."""
    open_deposits = (
        Deposit.objects.filter(code=code, status=Deposit.Status.SEEN)
        .order_by("pk")
        .values_list("txid", "output_index")
    )
    due = (
        QuarantinedTransfer.objects.filter(code=code, retry_at__lte=timezone.now())
        .order_by("pk")
        .values_list("txid", "output_index")
    )
    return [TransferKey(code, txid, index) for txid, index in [*open_deposits, *due]]


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
