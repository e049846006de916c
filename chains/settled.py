"""The settled watch: credited deposits and confirmed payouts stay followed for a window of blocks.

A reorganisation deeper than an asset's confirmations can take back what Kassa already settled, and the
node does not always keep the disconnected transactions (Bitcoin Core and Litecoin re-add to the mempool
only those of the last 10 blocks a reorganisation disconnects; an EVM revert forgets them). So for
`CHAIN_SETTLED_WATCH_BLOCKS[family]` blocks after its own, each such transaction is re-checked
(`settled_watch`: beat's `chain_settled_watch_all`, and the scan after every reorganisation it reports):

- its recorded block still in the best chain: nothing to do (one node call per block, not per transaction);
- otherwise its transaction is asked for (`tx_status`, `deposit_status`): mined in another block, its block
  is recorded (and, if it was reversed, it is back: marked, its alert resolved); waiting in the mempool, it
  is left to be mined; neither (unknown, or a conflicting transaction won): it is **reversed**;
- a reversed payout gets a `payout_reversed` alert once and its stored signed bytes are sent again on each
  check until the node has them (the same transaction, never a rebuilt one); its withdrawals stay done;
- a reversed deposit gets a `deposit_reversed` alert once; the credited money is never debited by itself,
  a person decides (chains.deposits).

A reversed one stays watched, whatever its age, until it is mined again or a person settles it. One record
that fails to check is logged and skipped; a node that cannot be reached stops that code's round.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from alerts.services import alert_raise
from chains.backend import ChainBackend, get_backend
from chains.base import BlockRef, ChainUnavailable, Outcome, SignedTx, TxStatus
from chains.deposit_reversals import deposit_remined, deposit_reverse, remined
from chains.models import ChainTx, ChainTxStatus
from core.assets import get_asset
from payments.models import Deposit

logger = logging.getLogger(__name__)

DEFAULT_WATCH_BLOCKS = 100  # a family `CHAIN_SETTLED_WATCH_BLOCKS` does not name
# The chain transactions that pay withdrawals (sweeps and top-ups are the house's own, followed by sweeps).
PAYOUT_KINDS = [ChainTx.Kind.PAYOUT, ChainTx.Kind.BUMP, ChainTx.Kind.CHILD]
SENT = {Outcome.ACCEPTED, Outcome.ALREADY_KNOWN, Outcome.ALREADY_MINED}


def watch_blocks(code: str) -> int:
    return int(settings.CHAIN_SETTLED_WATCH_BLOCKS.get(get_asset(code).family, DEFAULT_WATCH_BLOCKS))


def settled_watch(code: str, *, tip: int | None = None) -> None:
    """One round of the settled watch of `code`, below `tip` (the node's, asked for when not given); raises
    ChainUnavailable when the node cannot be asked."""
    backend = get_backend(code)
    floor = (backend.tip(code).height if tip is None else tip) - watch_blocks(code)
    canonical: dict[str, bool] = {}

    def in_best_chain(height: int | None, block_hash: str) -> bool:
        if height is None or not block_hash:
            return False
        if block_hash not in canonical:
            canonical[block_hash] = backend.in_best_chain(code, BlockRef(height, block_hash))
        return canonical[block_hash]

    for chain_tx in _watched_payouts(code, floor):
        _guarded(code, f"payout {chain_tx.txid}", partial(_watch_payout, backend, chain_tx, in_best_chain))
    statuses: dict[str, TxStatus] = {}
    for deposit in _watched_deposits(code, floor):
        what = f"deposit {deposit.txid}:{deposit.output_index}"
        _guarded(code, what, partial(_watch_deposit, backend, deposit, in_best_chain, statuses))


def _guarded(code: str, what: str, check: Callable[[], None]) -> None:
    """One record's check; one that fails is logged and the others go on (a node or database outage stops
    the round: every other record would fail the same way)."""
    try:
        check()
    except (ChainUnavailable, OperationalError, InterfaceError):
        raise
    except Exception:
        logger.exception("%s: the settled watch could not check %s; the others go on", code, what)


def _watched_payouts(code: str, floor: int) -> list[ChainTx]:
    return list(
        ChainTx.objects.filter(code=code, status=ChainTxStatus.CONFIRMED, kind__in=PAYOUT_KINDS)
        .filter(Q(block_height__gt=floor) | Q(reversed_at__isnull=False))
        .only("code", "txid", "raw", "fee", "block_height", "block_hash", "reversed_at")
        .order_by("pk")
    )


def _watched_deposits(code: str, floor: int) -> list[Deposit]:
    fields = ("code", "txid", "output_index", "block_height", "block_hash", "reversed_at")
    credited = Deposit.objects.filter(code=code, status=Deposit.Status.CONFIRMED)
    recent = credited.filter(block_height__gt=floor).only(*fields)  # deposit_settled_idx
    reversed_ = credited.filter(reversed_at__isnull=False).only(*fields)  # deposit_reversed_idx
    return sorted({deposit.pk: deposit for deposit in [*recent, *reversed_]}.values(), key=lambda d: d.pk)


def _watch_payout(
    backend: ChainBackend, chain_tx: ChainTx, in_best_chain: Callable[[int | None, str], bool]
) -> None:
    if chain_tx.reversed_at is None and in_best_chain(chain_tx.block_height, chain_tx.block_hash):
        return
    status = backend.tx_status(chain_tx.code, chain_tx.txid)
    if status.confirmations > 0 and status.block is not None:
        chain_tx_remined(chain_tx_id=chain_tx.pk, block=status.block)
    elif status.known and status.confirmations == 0:
        return  # back in the mempool (re-added by the node, or re-sent by an earlier round): mined soon
    else:
        conflicted = status.confirmations < 0
        chain_tx_reverse(chain_tx_id=chain_tx.pk, conflicted=conflicted)
        if not conflicted:  # a conflicting spend won: the same bytes can never be mined, a person decides
            _resend(backend, chain_tx)


def _resend(backend: ChainBackend, chain_tx: ChainTx) -> None:
    """The stored signed bytes again (the rule of every payout retry: re-send, never rebuild)."""
    signed = SignedTx(txid=chain_tx.txid, raw=chain_tx.raw, fee=chain_tx.fee)
    outcome = backend.broadcast(chain_tx.code, signed)
    if outcome == Outcome.UNAVAILABLE:
        raise ChainUnavailable(f"{chain_tx.code}: the node could not be asked to take {chain_tx.txid}")
    if outcome in SENT:
        logger.warning("%s: reversed payout %s sent again (its stored bytes)", chain_tx.code, chain_tx.txid)
        return
    ChainTx.objects.filter(pk=chain_tx.pk).update(last_error=f"re-sent after a reorganisation: {outcome}")
    logger.warning(
        "%s: reversed payout %s sent again, the node answered %s", chain_tx.code, chain_tx.txid, outcome
    )


def _watch_deposit(
    backend: ChainBackend,
    deposit: Deposit,
    in_best_chain: Callable[[int | None, str], bool],
    statuses: dict[str, TxStatus],
) -> None:
    if deposit.reversed_at is None and in_best_chain(deposit.block_height, deposit.block_hash):
        return
    if deposit.txid not in statuses:  # one question per transaction, however many of its outputs are ours
        statuses[deposit.txid] = backend.deposit_status(deposit.code, deposit.txid)
    status = statuses[deposit.txid]
    if status.confirmations > 0 and status.block is not None:
        deposit_remined(deposit_id=deposit.pk, block=status.block)
    elif status.known and status.confirmations == 0:
        return  # back in the mempool: mined again soon, or reversed later if it leaves it
    else:
        deposit_reverse(deposit_id=deposit.pk)


# --- transitions of a confirmed payout transaction --------------------------------------------------------


def _payout_key(chain_tx: ChainTx) -> str:
    return f"{chain_tx.code}:{chain_tx.txid}"


@transaction.atomic
def chain_tx_reverse(*, chain_tx_id: int, conflicted: bool = False) -> ChainTx:
    """A confirmed payout the chain no longer holds: marked, and a person told once. Its withdrawals stay
    done (they were paid, and the same bytes are sent again); a conflicting spend is for a person."""
    chain_tx = ChainTx.objects.select_for_update().get(pk=chain_tx_id)
    if chain_tx.status != ChainTxStatus.CONFIRMED or chain_tx.reversed_at is not None:
        return chain_tx  # already reversed: told once per reversal, not on every round
    chain_tx.reversed_at = timezone.now()
    chain_tx.save(update_fields=["reversed_at", "updated_at"])
    withdrawals = chain_tx.withdrawal_links.count()
    why = (
        "a conflicting transaction spent its inputs: re-sending cannot help, a person decides"
        if conflicted
        else "its stored signed bytes are sent again until it is mined"
    )
    alert_raise(
        kind="payout_reversed",
        key=_payout_key(chain_tx),
        message=(
            f"{chain_tx.code} payout {chain_tx.txid} (paying {withdrawals} done withdrawal(s)) is no longer "
            f"on the chain after a reorganisation; {why}"
        ),
    )
    return chain_tx


@transaction.atomic
def chain_tx_remined(*, chain_tx_id: int, block: BlockRef) -> ChainTx:
    """A confirmed payout found in another block than recorded: that block is recorded; if it was
    reversed, it is back and its alert resolved."""
    chain_tx = ChainTx.objects.select_for_update().get(pk=chain_tx_id)
    remined(chain_tx, block, kind="payout_reversed", key=_payout_key(chain_tx))
    return chain_tx


# --- counts for `chain status` and /metrics ----------------------------------------------------------------


def reversed_counts() -> dict[str, dict[str, int]]:
    """Per code, the payouts and credited deposits reversed now: {"payouts": {code: n}, "deposits": ...}."""
    payouts: Any = (
        ChainTx.objects.filter(reversed_at__isnull=False).values_list("code").annotate(n=Count("pk"))
    )
    deposits: Any = (
        Deposit.objects.filter(reversed_at__isnull=False, status=Deposit.Status.CONFIRMED)
        .values_list("code")
        .annotate(n=Count("pk"))
    )
    return {"payouts": dict(payouts), "deposits": dict(deposits)}
