"""Unrouted deposits: transfers no invoice or static address owns, and the one state machine a person moves
them through. Nothing is ever credited to a guess: only a person routes one.

`grep "^def unrouted_" chains/unrouted.py` lists it (`TRANSITIONS` says from where each may run):

    (new) --unrouted_record--> open            (ingestion: a deposit with no owner, at first sight)
    open --unrouted_void--> void               (the chain failed or dropped it before it was final)
    open --unrouted_assign--> assigned         (a person: credited through the invoice's or static address's
                                                own deposit path, its webhooks in the same commit)
    open --unrouted_refund--> refunding        (a person: a house payout back to the sender, or elsewhere)
    refunding --unrouted_refunded--> refunded  (that payout is done; withdrawals calls it)
    refunding --unrouted_refund_failed--> open (that payout was rejected; a person decides again)
    open --unrouted_keep--> kept               (a person, with the reason: the house's own money, such as its
                                                funding of TON's or Solana's receiving wallet, which is
                                                also where customers pay)

A person acts only once its deposit is confirmed (final). Each transition locks the deposit and then its
unrouted row (ingestion locks the deposit first too), writes one `UnroutedEvent` (who, when, why), and keeps
the `deposit_unrouted` alert of its code (one per code, aggregated) raised while any of the code's final
ones is open. Merchants' claims (`DepositClaim`) on the same transaction are decided in the same commit.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, localcontext
from uuid import UUID

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from alerts.services import alert_raise, alert_resolve
from chains.addresses import InvalidAddress, route_key, validate_address
from chains.backend import get_backend
from chains.deposits import UNROUTED, deposit_route_to, register_deposit_handler
from chains.models import ClaimStatus, DepositClaim, UnroutedDeposit, UnroutedEvent
from core.assets import get_asset
from core.bulkinsert import bulk_insert
from core.errors import FieldError, InvalidState, NotFound, ValidationFailed
from core.money import MONEY_CONTEXT, number_text
from payments.models import Deposit, DepositAddress, StaticDepositAddress
from security.audit import audit_record

logger = logging.getLogger(__name__)

Status = UnroutedDeposit.Status
Reason = UnroutedDeposit.Reason
ALERT = "deposit_unrouted"
KASSA = "kassa"  # `by` of what the code did, not a person

TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "void": (frozenset({Status.OPEN}), Status.VOID),
    "assign": (frozenset({Status.OPEN}), Status.ASSIGNED),
    "refund": (frozenset({Status.OPEN}), Status.REFUNDING),
    "refunded": (frozenset({Status.REFUNDING}), Status.REFUNDED),
    "refund_failed": (frozenset({Status.REFUNDING}), Status.OPEN),
    "keep": (frozenset({Status.OPEN}), Status.KEPT),
}

# Where a person may route a deposit: kind -> the deposit address an id names (NotFound / ValidationFailed
# otherwise). "static" is chains' own; invoices registers "invoice" (chains never imports invoices).
AssignTarget = Callable[[str], DepositAddress]
assign_targets: dict[str, AssignTarget] = {}

# withdrawals registers the one that creates the house payout (deposit, to, tag, attempt) -> its uid.
RefundHandler = Callable[[Deposit, str, str, int], str]
refund_handlers: list[RefundHandler] = []


def register_assign_target(kind: str, resolve: AssignTarget) -> None:
    assign_targets[kind] = resolve


# --- the guard ------------------------------------------------------------------------------------------


def _guard(unrouted: UnroutedDeposit, name: str) -> str:
    """The target of transition `name`, or InvalidState when the table does not allow it from here."""
    sources, target = TRANSITIONS[name]
    if unrouted.status not in sources:
        raise InvalidState(f"Cannot {name.replace('_', ' ')} an unrouted deposit that is {unrouted.status}.")
    return target


def _move(unrouted: UnroutedDeposit, name: str, by: str, detail: str, *fields: str) -> None:
    """The one status change: guarded by the table, saved with `fields`, audited in the same commit."""
    unrouted.status = _guard(unrouted, name)
    unrouted.save(update_fields=["status", *fields, "updated_at"])
    UnroutedEvent.objects.create(unrouted=unrouted, action=name, by=by[:254], detail=detail[:255])


def _locked(unrouted_id: int | str) -> tuple[UnroutedDeposit, Deposit]:
    """The unrouted row and its deposit, both locked, the deposit first (as ingestion locks it)."""
    try:
        deposit_id = UnroutedDeposit.objects.values_list("deposit_id", flat=True).get(pk=int(unrouted_id))
    except (UnroutedDeposit.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound(f"No unrouted deposit {unrouted_id}.") from exc
    # of=self: PostgreSQL cannot lock the nullable side of an outer join.
    deposit = Deposit.objects.select_for_update(of=("self",)).select_related("company").get(pk=deposit_id)
    unrouted = UnroutedDeposit.objects.select_for_update().get(pk=int(unrouted_id))
    return unrouted, deposit


def _require_final(deposit: Deposit) -> None:
    """Only what the chain holds for good is credited or paid back."""
    if deposit.status != Deposit.Status.CONFIRMED:
        raise InvalidState(
            f"The deposit is {deposit.status}, not confirmed: nothing can be done with it until the chain "
            "holds it for good."
        )
    if deposit.reversed_at is not None:
        raise InvalidState(
            "A reorganisation took the deposit off the chain (deposit_reversed): nothing can be done with it "
            "unless the chain mines it again."
        )


# --- ingestion ------------------------------------------------------------------------------------------


class UnroutedHandler:
    """chains.deposits' handler of deposits no address owns: recorded open at first sight, alerted once
    final."""

    def on_seen(self, deposit: Deposit) -> None:
        self.on_seen_many([deposit])

    def on_seen_many(self, deposits: list[Deposit]) -> None:
        unrouted_record(deposits)

    def on_confirmed(self, deposit: Deposit) -> None:
        self.on_confirmed_many([deposit])

    def on_confirmed_many(self, deposits: list[Deposit]) -> None:
        for code in sorted({deposit.code for deposit in deposits}):
            _alert(code, raised=True)

    def on_failed(self, deposit: Deposit) -> None:
        unrouted_void(deposit_id=deposit.pk, why=f"the transfer is {deposit.status}")


def unrouted_record(deposits: list[Deposit]) -> list[UnroutedDeposit]:
    """(new) -> open, for deposits just recorded with no owner, each with why it could not be routed."""
    # Distinct: a tagged chain's deposit addresses share one route key (TON's house wallet), one row each.
    known = set(
        DepositAddress.objects.filter(route_key__in={_route_key(d) for d in deposits})
        .values_list("route_key", flat=True)
        .distinct()
    )
    # One statement each, not one per deposit: a scan's batch may bring many (core.bulkinsert sets the keys).
    rows = bulk_insert(
        [
            UnroutedDeposit(deposit=deposit, code=deposit.code, reason=_reason(deposit, known))
            for deposit in deposits
        ]
    )
    bulk_insert([UnroutedEvent(unrouted=row, action="record", by=KASSA, detail=row.reason) for row in rows])
    for row in rows:
        logger.warning("unrouted %s deposit %s recorded (%s)", row.code, row.deposit.txid, row.reason)
    return rows


def _route_key(deposit: Deposit) -> str:
    return route_key(deposit.code, deposit.address)


def _reason(deposit: Deposit, known: set[str]) -> str:
    if deposit.company_id is not None:
        return Reason.WRONG_ASSET  # chains.deposits recorded it against the company of that address
    if _route_key(deposit) not in known and not _to_shared_address(deposit):
        return Reason.UNKNOWN_ADDRESS
    return Reason.UNKNOWN_TAG if deposit.tag.strip() else Reason.NO_TAG


def _to_shared_address(deposit: Deposit) -> bool:
    """Paid to the receiving wallet every tag of its code shares (TON, Solana): a tag problem, also before
    any invoice of the code was made."""
    shared = get_backend(deposit.code).shared_address(deposit.code)
    return shared is not None and route_key(deposit.code, shared) == _route_key(deposit)


@transaction.atomic
def unrouted_void(*, deposit_id: int, why: str) -> UnroutedDeposit | None:
    """open -> void: the chain failed, froze or dropped the transfer before it was final."""
    unrouted = UnroutedDeposit.objects.select_for_update().filter(deposit_id=deposit_id).first()
    if unrouted is None or unrouted.status == Status.VOID:
        return unrouted
    _move(unrouted, "void", KASSA, why)
    _claims_decide(unrouted, ClaimStatus.DECLINED)
    return unrouted


# --- a person's actions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    kind: str  # a key of `assign_targets`: "invoice" or "static"
    id: str


@transaction.atomic
def unrouted_assign(*, unrouted_id: int | str, target: Target, by: str, why: str = "") -> UnroutedDeposit:
    """open -> assigned: credit the deposit through the chosen invoice's or static address's own deposit path
    (its status, ledger entry and webhooks as if the customer had used the right tag), once."""
    unrouted, deposit = _locked(unrouted_id)
    address = _resolve(target)
    if unrouted.status == Status.ASSIGNED and unrouted.assigned_to_id == address.pk:
        return unrouted  # a double click: already done, nothing again
    _require_final(deposit)
    _guard(unrouted, "assign")
    if address.code != deposit.code:
        raise ValidationFailed(
            [
                FieldError(
                    target.kind, "wrong_asset", f"that {target.kind} takes {address.code}, not {deposit.code}"
                )
            ]
        )
    if deposit.company_id is not None and deposit.company_id != address.company_id:
        raise ValidationFailed(
            [
                FieldError(
                    target.kind,
                    "other_merchant",
                    "the payment reached another merchant's address: it can go only to that merchant",
                )
            ]
        )
    deposit_route_to(deposit, address)
    unrouted.assigned_to = address
    detail = f"to {target.kind} {target.id}" + (f": {why}" if why else "")
    _move(unrouted, "assign", by, detail, "assigned_to")
    _claims_decide(unrouted, ClaimStatus.DECLINED, winner=(address.company_id, ClaimStatus.CREDITED))
    audit_record(
        None,
        company=address.company,
        action="deposit.assigned",
        detail=f"{number_text(deposit.amount)} {deposit.code} {deposit.txid} {detail} by {by}",
    )
    _alert(deposit.code)
    return unrouted


def _resolve(target: Target) -> DepositAddress:
    resolve = assign_targets.get(target.kind)
    if resolve is None:
        raise ValidationFailed([FieldError("target", "invalid", f"cannot assign to a {target.kind!r}")])
    return resolve(target.id.strip())


def parse_uuid(value: str, what: str) -> uuid.UUID:
    """`value` as a UUID; anything else is answered as an unknown id (NotFound naming `what`)."""
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError) as exc:
        raise NotFound(f"No {what} {value}.") from exc


def _static_address(static_id: str) -> DepositAddress:
    static = (
        StaticDepositAddress.objects.select_related("deposit_address__company")
        .filter(pk=parse_uuid(static_id, "static address"))
        .first()
    )
    if static is None:
        raise NotFound(f"No static address {static_id}.")
    return static.deposit_address


register_assign_target("static", _static_address)


@transaction.atomic
def unrouted_refund(
    *, unrouted_id: int | str, by: str, to: str = "", tag: str = "", why: str = ""
) -> UnroutedDeposit:
    """open -> refunding: a house payout of what arrived, less the network fee, back to the sender (or to
    `to`), through the payout pipeline (sign, store, send); refunded once that payout is done."""
    unrouted, deposit = _locked(unrouted_id)
    if unrouted.status in (Status.REFUNDING, Status.REFUNDED) and to.strip() in ("", unrouted.refund_to):
        return unrouted  # a double click: one payout only
    _require_final(deposit)
    _guard(unrouted, "refund")
    if not refund_handlers:
        raise InvalidState("Refunds need the withdrawals module, which is not installed.")
    destination = _destination(deposit, to)
    tag = tag.strip() or (f"refund {deposit.txid[:16]}" if get_asset(deposit.code).tag_required else "")
    unrouted.refunds += 1
    unrouted.refund_uid = refund_handlers[0](deposit, destination, tag, unrouted.refunds)
    unrouted.refund_to, unrouted.refund_tag, unrouted.note = destination, tag, ""
    detail = f"to {destination} as payout {unrouted.refund_uid}" + (f": {why}" if why else "")
    _move(unrouted, "refund", by, detail, "refunds", "refund_uid", "refund_to", "refund_tag", "note")
    _alert(deposit.code)
    return unrouted


@transaction.atomic
def unrouted_keep(*, unrouted_id: int | str, by: str, why: str) -> UnroutedDeposit:
    """open -> kept: a person says the payment is the house's own (its funding of a receiving wallet that
    customers pay too: TON's, Solana's), so nobody is credited and nothing is sent back. The reason is
    required: it is the only record of why no customer got this money."""
    if not why.strip():
        raise ValidationFailed(
            [FieldError("why", "required", "say why the house keeps it (kept in the audit)")]
        )
    unrouted, deposit = _locked(unrouted_id)
    if unrouted.status == Status.KEPT:
        return unrouted  # a double click
    _require_final(deposit)
    _guard(unrouted, "keep")
    if deposit.company_id is not None:
        raise InvalidState(
            "The payment reached a merchant's deposit address (the wrong asset): it is that merchant's "
            "customer's, never the house's. Assign or refund it."
        )
    _move(unrouted, "keep", by, why.strip())
    _claims_decide(unrouted, ClaimStatus.DECLINED)
    _alert(deposit.code)
    return unrouted


def refund_amount(deposit: Deposit) -> Decimal:
    """What a refund of the deposit pays its receiver: what arrived less the asset's network fee, which the
    house pays the network with (0 or less: it cannot be refunded)."""
    with localcontext(MONEY_CONTEXT):
        return deposit.amount - get_asset(deposit.code).network_fee


def _destination(deposit: Deposit, to: str) -> str:
    """`to`, else the sender, checked for the deposit's network."""
    chosen = to.strip() or deposit.from_address
    try:
        return validate_address(deposit.code, chosen)
    except InvalidAddress as exc:
        if to.strip():
            raise ValidationFailed([FieldError("to", "invalid_address", str(exc))]) from exc
        raise ValidationFailed(
            [
                FieldError(
                    "to",
                    "sender_unknown",
                    f"the sender {deposit.from_address or '(none)'} is not a {deposit.code} address: "
                    "give the address to refund to",
                )
            ]
        ) from exc


def _refunding(deposit_id: int) -> UnroutedDeposit:
    unrouted = UnroutedDeposit.objects.select_for_update().filter(deposit_id=deposit_id).first()
    if unrouted is None:
        raise NotFound(f"No unrouted deposit for deposit {deposit_id}.")
    return unrouted


@transaction.atomic
def unrouted_refunded(*, deposit_id: int, uid: str) -> UnroutedDeposit:
    """refunding -> refunded: the house payout `uid` is done (withdrawals calls it, in the commit that
    completes the payout)."""
    unrouted = _refunding(deposit_id)
    if unrouted.status == Status.REFUNDED:
        return unrouted
    _move(unrouted, "refunded", KASSA, f"payout {uid} done")
    _claims_decide(unrouted, ClaimStatus.REFUNDED)
    return unrouted


@transaction.atomic
def unrouted_refund_failed(*, deposit_id: int, uid: str, reason: str) -> UnroutedDeposit:
    """refunding -> open: the house payout `uid` was rejected; a person decides again."""
    unrouted = _refunding(deposit_id)
    if unrouted.status != Status.REFUNDING or unrouted.refund_uid != uid:
        return unrouted  # an older payout's news, or told already
    unrouted.note = f"payout {uid} rejected: {reason}"[:255]
    _move(unrouted, "refund_failed", KASSA, unrouted.note, "note")
    _alert(unrouted.code, raised=True)
    return unrouted


# --- claims and the alert ---------------------------------------------------------------------------------


def _claims_decide(unrouted: UnroutedDeposit, status: str, winner: tuple[UUID, str] | None = None) -> None:
    """The merchants' open claims on this transaction get `status`; the winning company's its own."""
    deposit = unrouted.deposit
    claims = DepositClaim.objects.filter(code=deposit.code, txid=deposit.txid, status=ClaimStatus.OPEN)
    now = timezone.now()
    if winner is not None:
        claims.filter(company_id=winner[0]).update(status=winner[1], decided_at=now)
    claims.update(status=status, decided_at=now)


def open_final() -> dict[str, int]:
    """Open unrouted deposits whose deposit is confirmed (a person can act), per code."""
    rows = (
        UnroutedDeposit.objects.filter(
            status=Status.OPEN, deposit__status=Deposit.Status.CONFIRMED, deposit__reversed_at__isnull=True
        )
        .values("code")
        .annotate(count=Count("pk"))
    )
    return {row["code"]: row["count"] for row in rows}


def _alert(code: str, *, raised: bool = False) -> None:
    """One `deposit_unrouted` alert per code: raised (counted) when one becomes actionable, resolved once
    none of the code is open."""
    waiting = open_final().get(code, 0)
    if waiting and raised:
        alert_raise(
            kind=ALERT,
            key=code,
            message=f"{waiting} unrouted {code} deposit(s) wait for a person: assign or refund them, or keep "
            "the house's own (/dashboard/unrouted/, manage.py chain unrouted)",
        )
    elif not waiting:
        alert_resolve(kind=ALERT, key=code)


register_deposit_handler(UNROUTED, UnroutedHandler())
