"""`manage.py chain unrouted`: the operator's list of unrouted deposits and the actions on one (assign,
refund, keep: the same services as the staff page /dashboard/unrouted/)."""

from __future__ import annotations

import getpass
import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from chains.unrouted import Target, unrouted_assign, unrouted_keep, unrouted_refund
from chains.unrouted_selectors import UnroutedRow, unrouted_list
from core.errors import DomainError
from core.money import number_text


def add_arguments(parser: CommandParser) -> None:
    steps = parser.add_subparsers(dest="step")
    listing = steps.add_parser("list", help="the open ones (the default), oldest first")
    listing.add_argument("--all", action="store_true", help="every one, newest first")
    listing.add_argument("--json", action="store_true", help="one JSON object per deposit")
    assign = steps.add_parser("assign", help="credit one to an invoice or a static address")
    assign.add_argument("id", help="the unrouted deposit's id (the list's #)")
    target = assign.add_mutually_exclusive_group(required=True)
    target.add_argument("--invoice", help="the invoice id it pays")
    target.add_argument("--static-address", help="the static address id it belongs to")
    refund = steps.add_parser("refund", help="send one back, less the network fee, as a house payout")
    refund.add_argument("id", help="the unrouted deposit's id (the list's #)")
    refund.add_argument("--to", default="", help="the address to pay (default: the sender)")
    refund.add_argument("--tag", default="", help="the receiver's tag, on chains that take one")
    keep = steps.add_parser(
        "keep", help="the house keeps one: its own funding of the receiving wallet (TON, Solana)"
    )
    keep.add_argument("id", help="the unrouted deposit's id (the list's #)")
    keep.add_argument("--why", required=True, help="the reason (required), kept in the audit trail")
    for action in (assign, refund):
        action.add_argument("--why", default="", help="the reason, kept in the audit trail")
    for action in (assign, refund, keep):
        action.add_argument("--by", default="", help="who acts (default: the login name)")


def run(options: dict[str, Any], write: Any) -> None:
    step = options.get("step") or "list"
    if step == "list":
        for row in unrouted_list(open_only=not options.get("all")):
            write(json.dumps(as_json(row)) if options.get("json") else as_line(row))
        return
    by = options["by"] or f"{getpass.getuser()} (manage.py)"
    try:
        if step == "assign":
            kind, key = (
                ("invoice", options["invoice"])
                if options["invoice"]
                else ("static", options["static_address"])
            )
            done = unrouted_assign(
                unrouted_id=options["id"], target=Target(kind, key), by=by, why=options["why"]
            )
            write(f"#{done.pk} assigned to {kind} {key}: credited, the merchant's webhooks written")
        elif step == "keep":
            done = unrouted_keep(unrouted_id=options["id"], by=by, why=options["why"])
            write(f"#{done.pk} kept by the house: {options['why'].strip()}")
        else:
            done = unrouted_refund(
                unrouted_id=options["id"], to=options["to"], tag=options["tag"], by=by, why=options["why"]
            )
            write(f"#{done.pk} refunding to {done.refund_to} as payout {done.refund_uid}")
    except DomainError as exc:
        fields = "; ".join(f"{error.field}: {error.message}" for error in exc.errors)
        raise CommandError(fields or exc.detail) from exc


def as_json(row: UnroutedRow) -> dict[str, Any]:
    unrouted, deposit = row.unrouted, row.unrouted.deposit
    return {
        "id": unrouted.pk,
        "code": unrouted.code,
        "amount": number_text(deposit.amount),
        "txid": deposit.txid,
        "outputIndex": deposit.output_index,
        "address": deposit.address,
        "tag": deposit.tag,
        "from": deposit.from_address,
        "reason": unrouted.reason,
        "status": unrouted.status,
        "depositStatus": deposit.status,
        "seenAt": deposit.seen_at.isoformat(),
        "refundUid": unrouted.refund_uid or None,
        "note": unrouted.note or None,
        "claims": [
            {
                "merchant": claim.company.name,
                "invoice": str(claim.invoice_id or "") or None,
                "status": claim.status,
            }
            for claim in row.claims
        ],
    }


def as_line(row: UnroutedRow) -> str:
    unrouted, deposit = row.unrouted, row.unrouted.deposit
    hours = (timezone.now() - deposit.seen_at).total_seconds() / 3600
    final = "" if row.is_final else f" (deposit {deposit.status}: wait)"
    line = (
        f"#{unrouted.pk} {number_text(deposit.amount)} {unrouted.code} {unrouted.reason} "
        f"{unrouted.status}{final}"
        f"  tx {deposit.txid}:{deposit.output_index}  to {deposit.address}"
        f"{'#' + deposit.tag if deposit.tag else ''}  from {deposit.from_address or '-'}  {hours:.1f} h ago"
    )
    if unrouted.note:
        line += f"  ({unrouted.note})"
    for claim in row.claims:
        line += f"\n    claimed by {claim.company.name}" + (
            f" for invoice {claim.invoice_id}" if claim.invoice_id else ""
        )
        line += f" ({claim.status})"
    return line
