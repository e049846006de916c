"""The one payout pipeline every chain backend serves: plan -> sign -> store -> broadcast -> monitor.

- `payout_plan(code)` takes the code's due withdrawals (processing, with no transaction that could still
  confirm), screens them, asks the backend for a fee quote, builds one transaction for up to the backend's
  `max_outputs` of them, has the backend's `Signer` sign it and, in ONE commit, stores the signed bytes and
  txid (`ChainTx`) and links the withdrawals to it. Only then is it broadcast. A short payout wallet or a fee
  over the cap stores nothing: the withdrawals stay processing with a visible `blocked_reason` and an alert,
  and the next plan tries again.
- `payout_broadcast(chain_tx_id)` sends the stored bytes, never rebuilt ones: a retry (a lost answer, a
  worker killed after the send) re-sends the same transaction, which the node answers as already known or
  already mined. Once the node has it, each withdrawal gets its txid and a processing webhook with the
  txHash, in one commit.
- `payout_monitor(code)` (beat, and the sandbox after each block) re-sends stored transactions the node
  does not have (a crash between store and broadcast, a transaction dropped from the mempool), completes
  the withdrawals of a transaction that reached the asset's confirmations (or the chain's own finality,
  `TxStatus.final`, where the backend reports it), rejects those of one that failed on chain (the hold is
  released), closes a transaction the backend says expired and the node does not have (its withdrawals
  are due again: rebuilt by the plan, once), and plans whatever is due (a lost message finds its way here).

Network calls never run inside a database transaction. Two planners of one code at once are harmless: the
store step re-checks every withdrawal under its row lock and drops a plan whose withdrawals another plan
took first (that transaction was never sent).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from alerts.services import alert_raise, alert_resolve
from chains.backend import ChainBackend, get_backend
from chains.base import (
    ChainUnavailable,
    FeeOverCap,
    Outcome,
    Payment,
    PayoutHeld,
    PayoutRefused,
    SignedTx,
    TxStatus,
    held_kinds,
)
from chains.house import house_book_network_fee
from chains.models import ChainTx, ChainTxStatus
from chains.nonces import nonce_take
from chains.wallets import payout_wallets_read
from core import locks
from core.assets import get_asset
from core.enqueue import TaskRef
from core.offer import offered_codes
from withdrawals import bounces, expiry, services
from withdrawals.models import Withdrawal, WithdrawalTx
from withdrawals.policy import released
from withdrawals.screening import get_screen

logger = logging.getLogger(__name__)

PLAN_TASK = services.PLAN_TASK
BROADCAST_TASK = TaskRef[[int]]("withdrawals.tasks.payout_broadcast")
# A transaction in one of these may still confirm: its withdrawals are never planned again meanwhile.
LIVE = [ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST, ChainTxStatus.CONFIRMED]
SENT = {Outcome.ACCEPTED, Outcome.ALREADY_KNOWN, Outcome.ALREADY_MINED}
PLAN_BATCHES = 20  # batches per plan run; the monitor's next run takes the rest


def _due(code: str) -> list[Withdrawal]:
    """Processing, not broadcast, no transaction that could still confirm, and nothing of the payout policy
    holding it (a cool-down that ended is due here, at the next run of the monitor at the latest)."""
    live = WithdrawalTx.objects.filter(withdrawal=OuterRef("pk"), chain_tx__status__in=LIVE)
    return list(
        Withdrawal.objects.filter(code=code, status=Withdrawal.Status.PROCESSING, txid="")
        .filter(released())
        .exclude(Exists(live))
        .select_related("company")
        .order_by("created_at", "pk")
    )


def payout_plan(code: str) -> list[int]:
    """Plan, sign and store the due withdrawals of `code`; returns the ids of the stored transactions. One
    planner per code at a time, under a lock that dies with its holder (core.locks): a planner killed
    mid-plan holds up no payout."""
    with locks.held(f"payout-plan:{code}") as taken:
        if not taken:
            return []  # another planner runs for this code; what it leaves is planned by the next run
        return _plan(code)


def _plan(code: str) -> list[int]:
    backend = get_backend(code)
    due = [withdrawal for withdrawal in _due(code) if _screened(withdrawal)]
    size = backend.max_outputs
    stored: list[int] = []
    for start in range(0, min(len(due), size * PLAN_BATCHES), size):
        try:
            stored += _plan_batch(backend, code, due[start : start + size])
        except PayoutHeld as exc:
            _hold(code, due[start:], exc.kind, str(exc), alert=exc.alerts)
            break
        except ChainUnavailable as exc:
            logger.warning("%s: payouts paused, the node cannot be reached: %s", code, exc)
            break
    if stored:
        for kind in held_kinds():
            alert_resolve(kind=kind, key=code)
    return stored


def _plan_batch(backend: ChainBackend, code: str, batch: list[Withdrawal]) -> list[int]:
    """One stored transaction for the batch; when the node refuses the batch for a reason that is not
    about the wallet or the fee, each withdrawal is tried on its own, so one the node refuses (an address
    it will not pay) waits with the reason and never holds back the others."""
    try:
        fee = backend.quote_fee(code)
        if fee.over_cap:
            raise FeeOverCap(f"the network fee rate {fee.rate} {fee.unit} is over the configured cap")
        unsigned = backend.build(code, [_payment(w) for w in batch], fee)
        signed = backend.signer(code).sign(unsigned)
    except (PayoutHeld, ChainUnavailable, OperationalError, InterfaceError):
        raise
    except Exception as exc:
        if len(batch) > 1:
            return [pk for withdrawal in batch for pk in _plan_batch(backend, code, [withdrawal])]
        who = exc.refused_by if isinstance(exc, PayoutRefused) else "The node"  # the EVM signer says so
        if batch[0].blocked_reason.startswith(f"{who} refuses"):
            logger.warning("%s: withdrawal %s still refused: %s", code, batch[0].uid, exc)  # once in full
        else:
            logger.exception("%s: %s refuses to pay withdrawal %s", code, who.lower(), batch[0].uid)
        _hold(code, batch, "payout_refused", f"{who} refuses this payout: {exc}"[:255])
        return []
    chain_tx = _store(code, batch, signed, fee_rate=f"{fee.rate} {fee.unit} ({fee.source})")
    return [] if chain_tx is None else [chain_tx.pk]


def _payment(withdrawal: Withdrawal) -> Payment:
    return Payment(
        key=withdrawal.reference,
        to=withdrawal.to_address,
        tag=withdrawal.tag,
        amount=withdrawal.amount,
        bounce=False if bounces.resend_without_bounce(withdrawal) else None,
    )


def _screened(withdrawal: Withdrawal) -> bool:
    allowed, reason = get_screen().screen(withdrawal)
    if not allowed:
        services.withdrawal_reject(uid=withdrawal.uid, reason=reason or "Refused by compliance screening.")
    return allowed


def _hold(
    code: str, withdrawals: Sequence[Withdrawal], kind: str, reason: str, *, alert: bool = True
) -> None:
    """The withdrawals wait, processing, with the reason shown; a person is told once per condition (unless
    the wait ends by itself: `alert` False)."""
    Withdrawal.objects.filter(pk__in=[w.pk for w in withdrawals], status=Withdrawal.Status.PROCESSING).update(
        blocked_reason=reason[:255], updated_at=timezone.now()
    )
    if not alert:
        return
    alert_raise(kind=kind, key=code, message=f"{code}: {len(withdrawals)} withdrawal(s) waiting. {reason}")


@transaction.atomic
def _store(code: str, batch: Sequence[Withdrawal], signed: SignedTx, *, fee_rate: str) -> ChainTx | None:
    """Signed bytes, txid and links in one commit, before any broadcast; then the broadcast is enqueued."""
    locked = list(Withdrawal.objects.select_for_update().filter(pk__in=[w.pk for w in batch]).order_by("pk"))
    taken = WithdrawalTx.objects.filter(withdrawal__in=locked, chain_tx__status__in=LIVE).exists()
    if (
        taken
        or len(locked) != len(batch)
        or any(w.status != Withdrawal.Status.PROCESSING or w.txid for w in locked)
    ):
        logger.warning("%s: a plan lost its withdrawals to another one; its transaction is never sent", code)
        return None
    if signed.nonce is not None and not nonce_take(signed.chain, signed.sender, signed.nonce):
        # Another transaction of the sender took this nonce first: this one is never sent, and the
        # withdrawals are planned again (with the next nonce) by the next plan.
        logger.warning(
            "%s: nonce %s of %s was taken first; the plan is dropped", code, signed.nonce, signed.sender
        )
        return None
    chain_tx = ChainTx.objects.create(
        code=code,
        txid=signed.txid,
        raw=signed.raw,
        fee=signed.fee,
        fee_rate=fee_rate,
        sender=signed.sender,
        nonce=signed.nonce,
    )
    WithdrawalTx.objects.bulk_create([WithdrawalTx(withdrawal=w, chain_tx=chain_tx) for w in locked])
    Withdrawal.objects.filter(pk__in=[w.pk for w in locked]).update(
        blocked_reason="", updated_at=timezone.now()
    )
    BROADCAST_TASK.delay_on_commit(chain_tx.pk)
    return chain_tx


def payout_broadcast(chain_tx_id: int) -> Outcome | None:
    """Send the stored bytes of one transaction; on success its withdrawals get their txid and webhook."""
    chain_tx = ChainTx.objects.filter(pk=chain_tx_id).first()
    if chain_tx is None or chain_tx.status not in (ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST):
        return None
    backend = get_backend(chain_tx.code)
    if chain_tx.status == ChainTxStatus.SIGNED and _abandoned(backend, chain_tx):
        return None
    signed = SignedTx(txid=chain_tx.txid, raw=chain_tx.raw, fee=chain_tx.fee)
    try:
        outcome = backend.broadcast(chain_tx.code, signed)
    except ChainUnavailable:
        outcome = Outcome.UNAVAILABLE
    if outcome in SENT:
        _mark_sent(chain_tx.pk)
        return outcome
    ChainTx.objects.filter(pk=chain_tx.pk).update(last_error=str(outcome), updated_at=timezone.now())
    if outcome == Outcome.EXPIRED:
        expiry.refused_expired(chain_tx)
    elif outcome != Outcome.UNAVAILABLE:
        alert_raise(
            kind=f"payout_{outcome}",
            key=f"{chain_tx.code}:{chain_tx.txid}",
            message=(
                f"{chain_tx.code} payout {chain_tx.txid}: the node answered {outcome}; "
                "it is re-sent, never rebuilt while it could still be mined"
            ),
        )
    return outcome


def _abandoned(backend: ChainBackend, chain_tx: ChainTx) -> bool:
    """A stored transaction one of whose withdrawals was rejected before it went out is never sent: it is
    abandoned (its inputs released) and the others are planned again. Unless the node already has it (a
    worker died after sending it): then it is out, and a person is told."""
    gone = chain_tx.withdrawal_links.exclude(withdrawal__status=Withdrawal.Status.PROCESSING)
    if not gone.exists():
        return False
    if backend.tx_status(chain_tx.code, chain_tx.txid).known:
        alert_raise(
            kind="payout_after_reject",
            key=f"{chain_tx.code}:{chain_tx.txid}",
            message=f"{chain_tx.code} payout {chain_tx.txid} is on the chain, and pays a withdrawal that "
            "was rejected after it was planned",
        )
        return False
    ChainTx.objects.filter(pk=chain_tx.pk, status=ChainTxStatus.SIGNED).update(
        status=ChainTxStatus.FAILED,
        last_error="abandoned before it was sent: a withdrawal of it was rejected",
        updated_at=timezone.now(),
    )
    backend.release(chain_tx.code, chain_tx.raw)
    logger.warning(
        "%s: stored payout %s abandoned before it was sent (a withdrawal was rejected)",
        chain_tx.code,
        chain_tx.txid,
    )
    return True


@transaction.atomic
def _mark_sent(chain_tx_id: int) -> None:
    chain_tx = ChainTx.objects.select_for_update().get(pk=chain_tx_id)
    now = timezone.now()
    if chain_tx.status == ChainTxStatus.SIGNED:
        chain_tx.status = ChainTxStatus.BROADCAST
        chain_tx.broadcast_at = now
    chain_tx.attempts += 1
    chain_tx.last_error = ""
    chain_tx.save(update_fields=["status", "broadcast_at", "attempts", "last_error", "updated_at"])
    for uid in chain_tx.withdrawal_links.order_by("withdrawal_id").values_list("withdrawal__uid", flat=True):
        services.withdrawal_sent(uid=uid, txid=chain_tx.txid)


def payout_monitor(code: str, *, plan: bool = True) -> None:
    """Re-send what the node lacks, settle what the chain decided, replace what is stuck, then (with
    `plan`) plan what is due."""
    backend = get_backend(code)
    needed = get_asset(code).confirmations
    open_txs = ChainTx.objects.filter(
        code=code, status__in=[ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST]
    ).exclude(
        kind__in=[ChainTx.Kind.TOPUP, ChainTx.Kind.SWEEP]
    )  # sweeps follow their own (chains.evm.sweeps)
    for chain_tx in open_txs.order_by("pk"):
        if expiry.expired_unmined(backend, chain_tx):
            expiry.close_expired(code, chain_tx)  # the plan at the end of this run pays its withdrawals anew
            continue
        if chain_tx.status == ChainTxStatus.SIGNED:
            payout_broadcast(chain_tx.pk)  # stored but never accepted: a crash before the broadcast
            continue
        status = backend.tx_status(code, chain_tx.txid)
        if chain_tx.kind == ChainTx.Kind.CHILD:
            _follow_child(chain_tx, status, needed)
            continue
        # A transaction with a replacement in flight is decided by whichever of them confirms.
        replaced = _in_flight(chain_tx.replacements.filter(kind=ChainTx.Kind.BUMP))
        if status.bounced and status.final is not False:
            bounces.close_bounced(code, chain_tx, status)  # nothing was paid: a person decides
        elif status.failed and status.final is not False:
            reason = f"The transaction {status.failure or 'failed'} on chain."
            _settle(chain_tx.pk, ChainTxStatus.FAILED, reason=reason, mined=status)
        elif status.final if status.final is not None else status.confirmations >= needed:
            _settle(chain_tx.pk, ChainTxStatus.CONFIRMED, mined=status)
        elif status.failed:
            continue  # failed in a block the chain may still undo: decided at its finality
        elif replaced:
            continue
        elif not status.known:
            payout_broadcast(chain_tx.pk)  # dropped from the mempool: the same bytes again
        elif status.confirmations < 0 and not _in_flight(_siblings(chain_tx)):
            # Another transaction spent its inputs: it cannot confirm unless that one is undone by a
            # reorganisation. Never rebuilt automatically (a rebuild could pay twice): a person decides.
            alert_raise(
                kind="payout_conflict",
                key=f"{code}:{chain_tx.txid}",
                message=f"{code} payout {chain_tx.txid} conflicts with a confirmed transaction; "
                "its withdrawals wait for a person",
            )
        elif status.confirmations == 0 and _stuck(chain_tx) and not _in_flight(chain_tx.replacements.all()):
            _replace(backend, code, chain_tx)
        elif status.confirmations != chain_tx.confirmations:
            ChainTx.objects.filter(pk=chain_tx.pk).update(confirmations=status.confirmations)
    if plan:
        payout_plan(code)


def _in_flight(txs: QuerySet[ChainTx]) -> bool:
    return txs.filter(status__in=[ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST]).exists()


def _siblings(chain_tx: ChainTx) -> QuerySet[ChainTx]:
    """The other transactions paying any of its withdrawals (its replacements, or what it replaced)."""
    withdrawals = WithdrawalTx.objects.filter(chain_tx=chain_tx).values("withdrawal_id")
    return ChainTx.objects.filter(withdrawal_links__withdrawal_id__in=withdrawals).exclude(pk=chain_tx.pk)


def _stuck(chain_tx: ChainTx) -> bool:
    after = timedelta(seconds=settings.PAYOUT_BUMP_AFTER_SECONDS)
    return chain_tx.broadcast_at is not None and chain_tx.broadcast_at <= timezone.now() - after


def _replace(backend: ChainBackend, code: str, chain_tx: ChainTx) -> None:
    """Speed up a stuck payout, once: a replacement paying a higher fee (RBF), stored with the same
    withdrawals before it is sent; where the chain cannot replace it, a child spending its change (CPFP),
    which pays no withdrawal (the parent stays the payout). Neither: it waits, never rebuilt."""
    fee = backend.quote_fee(code)
    if fee.over_cap:
        return  # a higher fee than the cap allows: it waits as it is
    kind, signed = ChainTx.Kind.BUMP, backend.bump(code, chain_tx.txid, fee)
    if signed is None:
        kind, signed = ChainTx.Kind.CHILD, backend.child(code, chain_tx.txid, fee)
    if signed is None:
        return
    with transaction.atomic():
        helper = ChainTx.objects.create(
            code=code,
            kind=kind,
            replaces=chain_tx,
            txid=signed.txid,
            raw=signed.raw,
            fee=signed.fee,
            fee_rate=f"{fee.rate} {fee.unit} ({fee.source})",
            sender=signed.sender,
            nonce=signed.nonce,  # a same-nonce replacement (EVM) takes no new nonce
        )
        if kind == ChainTx.Kind.BUMP:
            links = WithdrawalTx.objects.filter(chain_tx=chain_tx).values_list("withdrawal_id", flat=True)
            WithdrawalTx.objects.bulk_create(
                [WithdrawalTx(withdrawal_id=pk, chain_tx=helper) for pk in links]
            )
    how = "replaced by" if kind == ChainTx.Kind.BUMP else "given the child"
    logger.info("%s: payout %s stuck, %s %s paying %s", code, chain_tx.txid, how, helper.txid, helper.fee)
    payout_broadcast(helper.pk)


def _follow_child(child: ChainTx, status: TxStatus, needed: int) -> None:
    """A CPFP child pays no withdrawal: its parent decides them. It is re-sent while the node lacks it (after
    its parent, which comes first by key), and closed once mined deep enough or conflicted."""
    if status.confirmations >= needed:
        _settle(child.pk, ChainTxStatus.CONFIRMED, mined=status)
    elif status.failed or status.confirmations < 0:
        _settle(child.pk, ChainTxStatus.FAILED, reason="its parent was replaced or conflicted")
    elif not status.known:
        payout_broadcast(child.pk)
    elif status.confirmations != child.confirmations:
        ChainTx.objects.filter(pk=child.pk).update(confirmations=status.confirmations)


@transaction.atomic
def _settle(chain_tx_id: int, outcome: str, *, reason: str = "", mined: TxStatus | None = None) -> None:
    """Decide a sent transaction's withdrawals by what the chain did with it. A `mined` one (confirmed, or
    failed on chain) paid the network: recorded, and booked to the house account in this commit."""
    chain_tx = ChainTx.objects.select_for_update().get(pk=chain_tx_id)
    if chain_tx.status != ChainTxStatus.BROADCAST:
        return
    chain_tx.status = outcome
    if mined is not None and mined.fee_paid is not None:
        chain_tx.fee_paid = mined.fee_paid
    if mined is not None and mined.block is not None:  # the settled watch follows it from there
        chain_tx.block_height, chain_tx.block_hash = mined.block.height, mined.block.hash
    chain_tx.save(update_fields=["status", "fee_paid", "block_height", "block_hash", "updated_at"])
    if mined is not None:
        house_book_network_fee(chain_tx)
    withdrawals = Withdrawal.objects.filter(
        chain_links__chain_tx=chain_tx, status=Withdrawal.Status.PROCESSING
    )
    for withdrawal in withdrawals.order_by("pk"):
        if outcome == ChainTxStatus.CONFIRMED:
            services.withdrawal_sent(uid=withdrawal.uid, txid=chain_tx.txid)  # the one that won, if another
            services.withdrawal_complete(uid=withdrawal.uid)
        else:
            services.withdrawal_reject(uid=withdrawal.uid, reason=reason)
    if outcome == ChainTxStatus.CONFIRMED:
        _siblings(chain_tx).filter(status__in=[ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST]).update(
            status=ChainTxStatus.REPLACED
        )


def payout_monitor_all() -> None:
    """Beat: the monitor of every offered code, and a reading of its payout wallet for `/metrics`
    (chains.wallets), each on its own (one failing chain never stops the others)."""
    offered = offered_codes()
    for code in offered:
        try:
            payout_monitor(code)
        except Exception:
            logger.exception("payout monitor of %s failed; the other codes go on", code)
    payout_wallets_read(offered)


def payout_sandbox_after_blocks(codes: list[str]) -> None:
    """chains.simulator.after_blocks: settle what the new blocks decided, inline, so that
    `POST /api/sandbox/blocks` answers with everything it caused already done. Planning stays with the
    payout worker (its message, and beat's monitor when a message is lost)."""
    for code in codes:
        try:
            payout_monitor(code, plan=False)
        except Exception:
            logger.exception("payout monitor of %s after sandbox blocks failed", code)
