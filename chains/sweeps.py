"""Sweeps: what a deposit address receives moves to the hot address, which pays the withdrawals. This is the
one state machine of a `Sweep`, for every backend that `sweeps`; each family drives it with its own steps
(chains.evm.sweeps, chains.tron.sweeps).

    (new) --sweep_open--> TOPUP or READY
    TOPUP --sweep_topup_stored--> TOPUP   a step readying the address stored, then sent: EVM its gas;
                                          TRON its activation, an energy delegation or TRX to burn
    TOPUP --sweep_topup_done--> TOPUP     TRON: that step is final; the next is decided
    TOPUP --sweep_topup_expired--> TOPUP  TRON: that step expired unmined; the step is decided again
    TOPUP --sweep_funded--> READY         the address has what its sweep needs
    READY --sweep_unfunded--> TOPUP       TRON: the call costs more now than when the address was readied
    READY --sweep_stored--> SENT          the sweep transaction stored, then sent
    SENT  --sweep_expired--> READY        TRON: the sweep expired unmined; built again
    SENT  --sweep_done--> DONE            mined (TRON: solidified): the funds are at the hot address
    TOPUP, READY or SENT --sweep_failed--> FAILED   a step or the sweep failed on chain, or the token
                                                    refuses the transfer: an alert for a person
    DONE or FAILED --sweep_release_stored--> (kept) TRON: the undelegation of the energy lent stored, sent
    DONE or FAILED --sweep_release_expired--> (kept) TRON: it expired unmined; signed again
    DONE or FAILED --sweep_released--> (kept)       TRON: it is final, the energy is back

Every transaction is signed and stored in one commit before it is sent (`store` makes its ChainTx row, or
answers None when the family's own rule forbids it, e.g. an EVM nonce taken first); a round after a crash
re-sends the stored bytes, never a new transaction. A step is "expired" only where the family says that
an expired transaction the node does not know can never be mined (TRON); EVM never expires one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Max

from alerts.services import alert_raise
from chains.addresses import route_key
from chains.backend import ChainBackend
from chains.base import ChainUnavailable, Outcome, SignedTx
from chains.house import house_book_network_fee
from chains.models import ChainTx, ChainTxStatus, Sweep
from core.money import number_text
from payments.models import Deposit, DepositAddress

logger = logging.getLogger(__name__)

OPEN: list[str] = [Sweep.Status.TOPUP, Sweep.Status.READY, Sweep.Status.SENT]
FINISHED: list[str] = [Sweep.Status.DONE, Sweep.Status.FAILED]
KEPT = None  # a transition that leaves the status as it is
TRANSITIONS: dict[str, tuple[list[str], str | None]] = {
    "sweep_topup_stored": ([Sweep.Status.TOPUP], Sweep.Status.TOPUP),
    "sweep_topup_done": ([Sweep.Status.TOPUP], Sweep.Status.TOPUP),
    "sweep_topup_expired": ([Sweep.Status.TOPUP], Sweep.Status.TOPUP),
    "sweep_funded": ([Sweep.Status.TOPUP], Sweep.Status.READY),
    "sweep_unfunded": ([Sweep.Status.READY], Sweep.Status.TOPUP),
    "sweep_stored": ([Sweep.Status.READY], Sweep.Status.SENT),
    "sweep_expired": ([Sweep.Status.SENT], Sweep.Status.READY),
    "sweep_done": ([Sweep.Status.SENT], Sweep.Status.DONE),
    "sweep_failed": (OPEN, Sweep.Status.FAILED),
    "sweep_release_stored": (FINISHED, KEPT),
    "sweep_release_expired": (FINISHED, KEPT),
    "sweep_released": (FINISHED, KEPT),
}
# Which stored transaction each storing (and expiring) transition concerns.
_FIELDS = {
    "sweep_topup_stored": "topup_tx",
    "sweep_topup_expired": "topup_tx",
    "sweep_stored": "sweep_tx",
    "sweep_expired": "sweep_tx",
    "sweep_release_stored": "release_tx",
    "sweep_release_expired": "release_tx",
}

Store = Callable[[Sweep], ChainTx | None]


def sweep_rounds(codes: list[str], round_of: Callable[[str], None]) -> None:
    """Beat: a sweep round of each code, each on its own: an unreachable node pauses its code only."""
    for code in codes:
        try:
            round_of(code)
        except ChainUnavailable as exc:
            logger.warning("%s: sweeps paused, the node cannot be reached: %s", code, exc)
        except Exception:
            logger.exception("sweep round of %s failed; the other codes go on", code)


def sweep_send(backend: ChainBackend, code: str, signed: SignedTx) -> None:
    """Send a stored step or sweep transaction (again: the same bytes); what the node answered is kept."""
    outcome = backend.broadcast(code, signed)
    if outcome in (Outcome.ACCEPTED, Outcome.ALREADY_KNOWN, Outcome.ALREADY_MINED):
        ChainTx.objects.filter(txid=signed.txid, status=ChainTxStatus.SIGNED).update(
            status=ChainTxStatus.BROADCAST
        )
    else:
        ChainTx.objects.filter(txid=signed.txid).update(last_error=str(outcome))


def sweep_candidates(code: str) -> list[tuple[str, int]]:
    """(address, derivation index) of the deposit addresses with a confirmed deposit of `code` newer than
    their last sweep of it, none open, and no energy still lent to them by an earlier sweep."""
    confirmed = (
        Deposit.objects.filter(code=code, status=Deposit.Status.CONFIRMED)
        .values("address")
        .annotate(last=Max("updated_at"))
    )
    swept = {
        route_key(code, address): last
        for address, last in Sweep.objects.filter(code=code)
        .values("address")
        .annotate(last=Max("created_at"))
        .values_list("address", "last")
    }
    busy = Sweep.objects.filter(code=code).filter(status__in=OPEN) | Sweep.objects.filter(
        code=code, delegated__gt=0
    )
    busy_keys = {route_key(code, address) for address in busy.values_list("address", flat=True)}
    due = set()
    for row in confirmed:
        key = route_key(code, row["address"])
        if key not in busy_keys and (swept.get(key) is None or swept[key] < row["last"]):
            due.add(key)
    # Any of our addresses, whatever code it was handed out for: another asset sent to it is swept too.
    indexes = DepositAddress.objects.filter(route_key__in=due, tag="").values_list(
        "route_key", "derivation_index"
    )
    return sorted(indexes)


def sweep_open(code: str, address: str, index: int, amount: Decimal, status: str) -> Sweep:
    """A sweep of `amount` from `address` (TOPUP, or READY when the address needs nothing first)."""
    sweep = Sweep.objects.create(
        code=code, address=address, derivation_index=index, amount=amount, status=status
    )
    logger.info("sweep %s opened: %s %s from %s (%s)", sweep.pk, amount, code, address, status)
    return sweep


def _locked(sweep_id: int, transition: str) -> Sweep | None:
    sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
    sources, _ = TRANSITIONS[transition]
    return sweep if sweep.status in sources else None


def _move(sweep: Sweep, transition: str, **fields: Any) -> None:
    target = TRANSITIONS[transition][1]
    if target is not KEPT:
        sweep.status = target
    for name, value in fields.items():
        setattr(sweep, name, value)
    sweep.save(update_fields=["status", "updated_at", *fields])


def _mined(chain_tx: ChainTx, outcome: str, fee_paid: Decimal | None, *, error: str = "") -> None:
    """A sweep's transaction was mined: its status and what it paid, booked to the house account."""
    chain_tx.status, chain_tx.last_error = outcome, error[:500]
    chain_tx.fee_paid = fee_paid if fee_paid is not None else chain_tx.fee_paid
    chain_tx.save(update_fields=["status", "last_error", "fee_paid", "updated_at"])
    house_book_network_fee(chain_tx)


@transaction.atomic
def _stored(sweep_id: int, transition: str, store: Store) -> bool:
    sweep = _locked(sweep_id, transition)
    field = _FIELDS[transition]
    if sweep is None or getattr(sweep, f"{field}_id") is not None:
        return False  # another round stored one first: this one is never sent
    chain_tx = store(sweep)
    if chain_tx is None:
        return False
    _move(sweep, transition, **{field: chain_tx})
    return True


@transaction.atomic
def _expired(sweep_id: int, transition: str, reason: str) -> None:
    """The stored transaction of `transition`'s field can never be mined: marked failed (it paid nothing),
    the field cleared so that the round decides again."""
    sweep = _locked(sweep_id, transition)
    field = _FIELDS[transition]
    chain_tx = getattr(sweep, field) if sweep is not None else None
    if sweep is None or chain_tx is None:
        return
    ChainTx.objects.filter(pk=chain_tx.pk).update(status=ChainTxStatus.FAILED, last_error=reason[:500])
    _move(sweep, transition, **{field: None, "last_error": reason[:500]})
    logger.warning("sweep %s: %s %s expired unmined; decided again", sweep.pk, chain_tx.kind, chain_tx.txid)


def sweep_topup_stored(sweep_id: int, store: Store) -> bool:
    """A step readying the address signed: stored in one commit before it is sent."""
    return _stored(sweep_id, "sweep_topup_stored", store)


@transaction.atomic
def sweep_topup_done(
    sweep_id: int, *, fee_paid: Decimal | None = None, delegated: Decimal = Decimal(0), lender: str = ""
) -> None:
    """The step in flight is final and succeeded: what it paid booked, the energy it lent (`delegated`
    TRX of `lender`'s stake) recorded, and the next step left to the next round."""
    sweep = _locked(sweep_id, "sweep_topup_done")
    if sweep is None or sweep.topup_tx is None:
        return
    _mined(sweep.topup_tx, ChainTxStatus.CONFIRMED, fee_paid)
    fields: dict[str, Any] = {"topup_tx": None, "last_error": ""}
    if delegated:
        fields |= {"delegated": sweep.delegated + delegated, "lender": lender}
    _move(sweep, "sweep_topup_done", **fields)


def sweep_topup_expired(sweep_id: int, reason: str) -> None:
    _expired(sweep_id, "sweep_topup_expired", reason)


@transaction.atomic
def sweep_funded(sweep_id: int, *, fee_paid: Decimal | None = None) -> None:
    sweep = _locked(sweep_id, "sweep_funded")
    if sweep is None:
        return
    if sweep.topup_tx is not None:
        _mined(sweep.topup_tx, ChainTxStatus.CONFIRMED, fee_paid)
    _move(sweep, "sweep_funded")


@transaction.atomic
def sweep_unfunded(sweep_id: int, reason: str) -> None:
    """The address no longer has what its sweep needs (a rate rose since): readied again, nothing signed."""
    sweep = _locked(sweep_id, "sweep_unfunded")
    if sweep is not None:
        _move(sweep, "sweep_unfunded", last_error=reason[:500])


def sweep_stored(sweep_id: int, store: Store) -> bool:
    """The sweep transaction signed: stored in one commit before it is sent."""
    return _stored(sweep_id, "sweep_stored", store)


def sweep_expired(sweep_id: int, reason: str) -> None:
    _expired(sweep_id, "sweep_expired", reason)


@transaction.atomic
def sweep_done(sweep_id: int, *, fee_paid: Decimal | None = None) -> None:
    sweep = _locked(sweep_id, "sweep_done")
    if sweep is None:
        return
    if sweep.sweep_tx is not None:
        _mined(sweep.sweep_tx, ChainTxStatus.CONFIRMED, fee_paid)
    _move(sweep, "sweep_done", last_error="")
    logger.info("sweep %s done: %s %s at the hot address", sweep.pk, sweep.amount, sweep.code)


@transaction.atomic
def sweep_failed(
    sweep_id: int, reason: str, *, failed: int | None = None, fee_paid: Decimal | None = None
) -> None:
    """The sweep can never move its funds as planned: its transaction (or a step's) `failed` on chain and
    paid what it burnt, or the token refuses the transfer before anything was signed (`failed` None)."""
    sweep = _locked(sweep_id, "sweep_failed")
    if sweep is None:
        return
    if failed is not None:
        chain_tx = ChainTx.objects.select_for_update().get(pk=failed)
        _mined(chain_tx, ChainTxStatus.FAILED, fee_paid, error=reason)
    _move(sweep, "sweep_failed", last_error=reason[:500])
    alert_raise(
        kind="sweep_failed",
        key=f"{sweep.code}:{sweep.address}",
        message=f"{sweep.code} sweep of {number_text(sweep.amount)} from {sweep.address} failed: {reason}. "
        "The funds stay at the deposit address and are not swept again by themselves; a person looks "
        "(a blacklisted address?).",
    )


def sweep_release_stored(sweep_id: int, store: Store) -> bool:
    """The undelegation of the energy lent to the address signed: stored before it is sent."""
    return _stored(sweep_id, "sweep_release_stored", store)


def sweep_release_expired(sweep_id: int, reason: str) -> None:
    _expired(sweep_id, "sweep_release_expired", reason)


@transaction.atomic
def sweep_released(sweep_id: int, *, fee_paid: Decimal | None = None) -> None:
    """The undelegation is final: the energy is back with its lender."""
    sweep = _locked(sweep_id, "sweep_released")
    if sweep is None or sweep.release_tx is None:
        return
    _mined(sweep.release_tx, ChainTxStatus.CONFIRMED, fee_paid)
    _move(sweep, "sweep_released", delegated=Decimal(0))
    logger.info("sweep %s: the energy lent to %s is back", sweep.pk, sweep.address)
