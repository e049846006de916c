"""Reads of unrouted deposits for the operator (the staff page, `manage.py chain unrouted`), with the
merchants' claims on each."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, QuerySet

from chains.models import DepositClaim, UnroutedDeposit

LIST_LIMIT = 200


@dataclass
class UnroutedRow:
    unrouted: UnroutedDeposit
    claims: list[DepositClaim] = field(default_factory=list)

    @property
    def is_final(self) -> bool:
        return self.unrouted.deposit.status == "confirmed"


def _base() -> QuerySet[UnroutedDeposit]:
    return UnroutedDeposit.objects.select_related("deposit", "deposit__company", "assigned_to")


def unrouted_list(*, open_only: bool = True, limit: int = LIST_LIMIT) -> list[UnroutedRow]:
    """Open ones (refunding too: still the operator's), oldest first; else every one, newest first. Each with
    the claims merchants made on its transaction."""
    if open_only:
        rows = _base().filter(status__in=[UnroutedDeposit.Status.OPEN, UnroutedDeposit.Status.REFUNDING])
        found = list(rows.order_by("created_at", "pk")[:limit])
    else:
        found = list(_base().order_by("-created_at", "-pk")[:limit])
    return _with_claims(found)


def unrouted_get(unrouted_id: int) -> UnroutedRow | None:
    found = _base().filter(pk=unrouted_id).first()
    return _with_claims([found])[0] if found is not None else None


def _with_claims(found: list[UnroutedDeposit]) -> list[UnroutedRow]:
    """One query for the claims of every row, matched on (code, txid)."""
    rows = [UnroutedRow(unrouted) for unrouted in found]
    if not rows:
        return rows
    by_tx = {(row.unrouted.code, row.unrouted.deposit.txid): row for row in rows}
    claims = DepositClaim.objects.select_related("company").filter(
        txid__in={txid for _, txid in by_tx}, code__in={code for code, _ in by_tx}
    )
    for claim in claims.order_by("created_at", "pk"):
        row = by_tx.get((claim.code, claim.txid))
        if row is not None:
            row.claims.append(claim)
    return rows


def claim_list_unmatched(*, limit: int = LIST_LIMIT) -> list[DepositClaim]:
    """Open claims whose transaction is no unrouted deposit (not seen yet, routed after all, or a wrong
    hash), oldest first: the operator answers the merchant."""
    unmatched = DepositClaim.objects.filter(status=DepositClaim.Status.OPEN).exclude(
        Exists(UnroutedDeposit.objects.filter(code=OuterRef("code"), deposit__txid=OuterRef("txid")))
    )
    return list(unmatched.select_related("company").order_by("created_at", "pk")[:limit])
