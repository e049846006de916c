"""The one ingestion pipeline every backend feeds: scan from the stored cursor, recheck what is open, advance.

Each cycle of a code (`chain_scan`):
1. keep the node watching ahead of the deposit addresses handed out (`ensure_watched`);
2. `scan` from the stored cursor, outside any transaction (network I/O never holds a database lock);
3. `recheck` what the scan did not report: transfers it reported removed by a reorg, deposits still open,
   quarantined transfers due for a retry. Only the recheck's answer drops a deposit, so a transfer a reorg
   removed but the chain mined again is never dropped; a double-spent one is;
4. ingest the recheck's answers, then the scan's transfers (in batches, a bad transfer quarantined): what
   was seen first is settled first;
5. advance the cursor with a compare-and-swap, once everything before it is ingested. A crash anywhere
   before that replays the cycle, which changes nothing already done (ingestion is idempotent);
6. after a cycle whose scan reported a reorganisation, the settled watch (chains.settled) re-checks the
   credited deposits and confirmed payouts of its window at once.

A node that cannot be reached pauses the code: one warning and an alert, and the next cycle tries again;
the first cycle that reaches it resumes (logged, alert resolved). The API keeps serving meanwhile.
"""

from __future__ import annotations

import logging

from django.db.models import F
from django.utils import timezone

from alerts.services import alert_raise, alert_resolve
from chains.backend import ChainBackend, get_backend
from chains.base import ChainTransfer, ChainUnavailable, ScanResult, TransferKey
from chains.deposits import deposits_ingest, open_transfer_keys
from chains.models import ChainCursor, ChainTx, WatchRange
from core.assets import get_asset
from payments.models import DerivationCounter

logger = logging.getLogger(__name__)

# A poll runs at most this many cycles of one code back to back while its scan says there is more to read.
CATCH_UP_ROUNDS = 10
# The node watches this many addresses past the last one handed out, and is extended when fewer remain
# than half of it.
WATCH_AHEAD = 1000


def chain_scan(code: str) -> int:
    """One ingestion cycle of `code`; returns how many transfers were ingested (0 while paused).

    Codes one backend scans together (the EVM codes of one chain) share the cursor of the first of them;
    the cycle of any other of them does nothing."""
    return _scan_once(code)[0]


def chain_catch_up(code: str, rounds: int = CATCH_UP_ROUNDS) -> int:
    """Ingestion cycles of `code` one after the other while its scan says it stopped early (`more`: a
    backlog after an outage, a busy stretch of blocks), at most `rounds` of them, so that one code's
    backlog is caught up within a poll or a few, and the other codes still get their turn; returns how
    many transfers were ingested."""
    ingested = 0
    for _ in range(rounds):
        count, more = _scan_once(code)
        ingested += count
        if not more:
            break
    return ingested


def _scan_once(code: str) -> tuple[int, bool]:
    """One cycle: (transfers ingested, whether the scan stopped early and should run again at once)."""
    backend = get_backend(code)
    codes = scanned_with(code)
    if codes[0] != code:
        return 0, False
    row, _ = ChainCursor.objects.get_or_create(code=code)
    try:
        _keep_watching(backend, code)
        result = backend.scan(code, row.cursor or None)
        scanned = _not_the_house(result.transfers)
        mentioned = {transfer.key for transfer in scanned}
        opened = [key for each in codes for key in open_transfer_keys(each)]
        to_check = [key for key in dict.fromkeys([*opened, *result.dropped]) if key not in mentioned]
        # What was seen before goes first: two payments to one invoice settled in the same cycle are taken
        # in the order they arrived, whether the scan or the recheck reports them.
        rechecked = [
            transfer
            for each in codes
            for transfer in _recheck(backend, each, [key for key in to_check if key.code == each])
        ]
        ingested = 0
        for transfers in (rechecked, scanned):
            for each in codes:
                ingested += deposits_ingest(each, [t for t in transfers if t.code == each])
    except ChainUnavailable as exc:
        _pause(row, str(exc))
        return 0, False
    advanced = _advance(row, result)
    if result.dropped:
        _after_reorg(codes, result.tip.height)
    return ingested, advanced and result.more


def _not_the_house(transfers: list[ChainTransfer]) -> list[ChainTransfer]:
    """The transfers that are payments: the house's own steps of a sweep (the gas or TRX it sends a deposit
    address before sweeping it) reach a deposit address too, and are none. A payout that pays one of our
    deposit addresses is a payment like any other."""
    txids = {transfer.txid for transfer in transfers}
    if not txids:
        return transfers
    ours = set(ChainTx.objects.filter(txid__in=txids, sweep__isnull=False).values_list("txid", flat=True))
    return [transfer for transfer in transfers if transfer.txid not in ours]


def _after_reorg(codes: list[str], tip: int) -> None:
    """A reorganisation the scan reported may reach below the confirmations: the settled watch re-checks
    what was credited and paid at once rather than at its next round."""
    from chains.settled import settled_watch  # it builds on ingestion (chains.deposits), as this does

    for code in codes:
        try:
            settled_watch(code, tip=tip)
        except ChainUnavailable as exc:
            logger.warning(
                "%s: the settled watch after a reorg waits, the node cannot be reached: %s", code, exc
            )


def scanned_with(code: str) -> list[str]:
    """The codes scanned in one cycle with `code`, the one whose cursor they share first."""
    return list(get_backend(code).scan_codes(code))


def _recheck(backend: ChainBackend, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
    return backend.recheck(code, keys) if keys else []


def chain_watch(code: str) -> None:
    """Extend what the node of `code` watches when fewer than half of `WATCH_AHEAD` addresses are left
    (the allocation of deposit addresses asks for this as it nears the end of the watched range)."""
    try:
        _keep_watching(get_backend(code), code)
    except ChainUnavailable as exc:
        logger.warning(
            "%s: the watched range could not be extended, the node cannot be reached: %s", code, exc
        )


def watched_until(code: str) -> int | None:
    """The last derivation index the node of `code` watches (-1: none yet); None when its backend needs
    no watching (it sees every address, as the sandbox does)."""
    if not get_backend(code).watches_addresses:
        return None
    found = WatchRange.objects.filter(code=code).values_list("watched_until", flat=True).first()
    return -1 if found is None else found


def _keep_watching(backend: ChainBackend, code: str) -> None:
    if not backend.watches_addresses:
        return
    handed_out = (
        DerivationCounter.objects.filter(family=get_asset(code).family)
        .values_list("next_index", flat=True)
        .first()
        or 0
    )
    watched = WatchRange.objects.filter(code=code).values_list("watched_until", flat=True).first()
    if watched is not None and watched - handed_out >= WATCH_AHEAD // 2:
        return
    until = backend.ensure_watched(code, handed_out + WATCH_AHEAD)
    WatchRange.objects.update_or_create(code=code, defaults={"watched_until": until})
    logger.info("%s: the node now watches deposit addresses up to index %s", code, until)


def _advance(row: ChainCursor, result: ScanResult) -> bool:
    """Store the scan's cursor, unless another scanner moved it first; whether it was stored."""
    advanced = ChainCursor.objects.filter(pk=row.pk, version=row.version).update(
        cursor=result.cursor,
        tip_height=result.tip.height,
        tip_hash=result.tip.hash,
        version=F("version") + 1,
        scanned_at=timezone.now(),
        paused_reason="",
    )
    if not advanced:
        logger.warning(
            "%s: another scanner advanced the cursor first; this cycle's cursor is dropped", row.code
        )
        return False
    if row.paused_reason:
        logger.warning("%s: the node answers again; ingestion resumed", row.code)
        alert_resolve(kind="node_down", key=row.code)
    return True


def _pause(row: ChainCursor, reason: str) -> None:
    if not row.paused_reason:
        logger.warning("%s: ingestion paused, the node cannot be reached: %s", row.code, reason)
        ChainCursor.objects.filter(pk=row.pk).update(paused_reason=reason[:255])
    alert_raise(kind="node_down", key=row.code, message=f"{row.code} node cannot be reached: {reason}")
