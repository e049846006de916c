"""The withdrawal state machine (docs/api.md): one function per transition.

`grep "^def withdrawal_" withdrawals/services.py` lists it:

    (new) --withdrawal_accept--> processing (txid ""), reached from withdrawal_request (API),
          withdrawal_refund_invoice (refunds.py, for invoices) and auto_withdrawal_sweep (auto_withdrawals.py)
    processing (txid "") --withdrawal_sent--> processing (txid set)   (withdrawals.payouts: planned,
          signed and stored with others in a chain transaction, then broadcast; rejected when screened out)
    processing (txid set) --withdrawal_unsent--> processing (txid "")   (its transaction expired unmined)
    processing (txid set) --withdrawal_bounced--> processing (txid "", held for an approval)   (its TON
          payment bounced back: withdrawals.bounces; approved, it is sent non-bounceable, or cancelled)
    processing (txid set) --withdrawal_complete--> done          (the payout monitor saw it confirm)
    processing --withdrawal_reject / withdrawal_sandbox_reject--> rejected
    (the house's own payouts, withdrawals.house_refunds: company NULL, no ledger entry, no webhook; done
    or rejected, they tell chains.unrouted in the same commit)
    (withdrawals.approvals: the merchant approves a held withdrawal, or cancels it with withdrawal_reject)

Each transition locks the row, returns early when it already happened, refuses any other source state,
saves only changed fields and writes its webhook in the same transaction. Money moves only through the
ledger: amount + fee is held at acceptance (reference "withdrawal:<uid>"), posted when done, released when
rejected.

Lock order, the same on every path so that no two transactions wait on each other in a cycle: the
company's payout policy row when a limit needs it (withdrawals.policy), the accounts of the codes involved
(sorted), then the company's uid counter. Refunds arrive holding the
invoice and its account lock (the invoice service credits right before calling us); sweeps hold their
rule's lock first. Nobody takes an account lock while holding the counter. A withdrawal in one code on
PostgreSQL takes both in one statement, the account first (payments.ledger.numbered explains how, and
why that order holds).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from decimal import localcontext
from typing import Any, cast
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chains.backend import get_backend
from chains.unrouted import unrouted_refund_failed, unrouted_refunded
from core.assets import get_asset
from core.enqueue import TaskRef
from core.errors import FieldError, InvalidState, NotFound, UnsupportedAsset, ValidationFailed
from core.money import MONEY_CONTEXT, number_text
from core.offer import is_sandbox
from core.request_id import log_objects
from notifications.events import notify_withdrawal_changed, notify_withdrawals_accepted
from payments.ledger import InsufficientBalance, Numbering, ledger_hold_numbered, ledger_post, ledger_release
from payments.models import Company, SandboxTransaction
from webhooks.models import WebhookEvent
from webhooks.services import webhook_enqueue, webhook_event_rows, webhook_publish
from withdrawals.events import withdrawal_body
from withdrawals.models import Withdrawal, WithdrawalCounter, WithdrawalRequest
from withdrawals.policy import Hold, holds_apply, payout_policy_enforce
from withdrawals.rules import CheckedItem, WithdrawalItem, check_item

logger = logging.getLogger(__name__)

Status = Withdrawal.Status
ACCEPTED_MESSAGE = "Withdrawal accepted"
PLAN_TASK = TaskRef[[str]]("withdrawals.tasks.payout_plan")


# --- helpers ----------------------------------------------------------------------------------------------


def _body(withdrawal: Withdrawal, tx_hash: str) -> dict[str, Any]:
    asset = get_asset(withdrawal.code)
    return withdrawal_body(
        status=withdrawal.status,
        asset=asset.base,
        dchain=asset.code,
        amount=withdrawal.amount,
        fee=withdrawal.fee,
        to=withdrawal.to_address,
        tx_hash=tx_hash,
        uid=withdrawal.uid,
        sandbox=is_sandbox(withdrawal.code),
    )


def _publish(withdrawal: Withdrawal, tx_hash: str = "") -> None:
    if withdrawal.company is None:
        return  # the house's own payout (withdrawals.house_refunds): no merchant to tell
    webhook_publish(
        company=withdrawal.company,
        family=WebhookEvent.Family.WITHDRAWAL,
        object_id=withdrawal.uid,
        body=_body(withdrawal, tx_hash),
    )
    notify_withdrawal_changed(withdrawal)  # members' e-mail (done, rejected, held), same commit


def _uid_numbering(company: Company) -> Numbering:
    """A withdrawal's uid, `<prefix>-<sequence>`, drawn from the company's counter; its hold's reference."""
    return Numbering(
        model=WithdrawalCounter,
        key_field="company",
        key=company.pk,
        field="next_sequence",
        prefix=f"{company.uid_prefix}-",
        reference=Withdrawal.REFERENCE,
    )


def explorer_link(withdrawal: Withdrawal) -> str | None:
    if not withdrawal.txid:
        return None
    return get_backend(withdrawal.code).explorer_url(withdrawal.code, withdrawal.txid)


def _locked(uid: str) -> Withdrawal | None:
    # of=("self",): on PostgreSQL select_related would otherwise lock the company row as well.
    return (
        Withdrawal.objects.select_for_update(of=("self",)).select_related("company").filter(uid=uid).first()
    )


# The withdrawal state machine. A withdrawal is accepted processing (withdrawal_accept); broadcasting
# keeps it processing and records its transaction; then one of these ends it.
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "complete": (frozenset({Status.PROCESSING}), Status.DONE),
    "reject": (frozenset({Status.PROCESSING}), Status.REJECTED),
}


def _guard(withdrawal: Withdrawal, name: str) -> str:
    """The target of transition `name`, or InvalidState when the table does not allow it from here."""
    sources, target = TRANSITIONS[name]
    if withdrawal.status not in sources:
        raise InvalidState(f"Cannot {name} a withdrawal that is {withdrawal.status}.")
    return target


def withdrawal_accept(
    *,
    company: Company,
    items: Sequence[CheckedItem],
    request: WithdrawalRequest | None = None,
    is_automatic: bool = False,
    refund_invoice_id: UUID | None = None,
    holds: Sequence[Hold | None] | None = None,
) -> list[Withdrawal]:
    """(new) -> processing for checked items: hold amount + fee, create, first webhook, enqueue broadcast.

    The one way in for manual, bulk, automatic and refund withdrawals; the items passed the rules
    (withdrawals.rules) and the payout policy, whose `holds` (one per item) are written with them.
    Raises InsufficientBalance, having written nothing, when a code is short.

    Inside the caller's transaction, which holds the locks until it ends (no savepoint of its own: two round
    trips per call). One item with no request and no payout holds may come in autocommit instead: the
    ledger then writes it in a transaction of its own (on PostgreSQL, one statement).
    """
    autocommit = not transaction.get_connection().in_atomic_block
    if autocommit and (len(items) != 1 or request is not None or holds is not None):
        raise transaction.TransactionManagementError("withdrawal_accept must run inside transaction.atomic.")
    codes = sorted({item.code for item in items})

    def rows(uids: Sequence[str]) -> tuple[list[Withdrawal], list[WebhookEvent]]:
        """The withdrawals of `items` with these uids (placeholders the ledger fills), and their first
        webhook events."""
        withdrawals = [
            Withdrawal(
                uid=uid,
                company=company,
                request=request,
                code=item.code,
                to_address=item.to,
                tag=item.tag,
                amount=item.amount,
                fee=item.fee,
                is_automatic=is_automatic,
                is_refund=refund_invoice_id is not None,
                refund_invoice_id=refund_invoice_id,
            )
            for item, uid in zip(items, uids, strict=True)
        ]
        if holds is not None:
            holds_apply(withdrawals, holds)
        family = WebhookEvent.Family.WITHDRAWAL
        return withdrawals, webhook_event_rows([(company, family, w.uid, _body(w, "")) for w in withdrawals])

    with localcontext(MONEY_CONTEXT):
        amounts = [(item.code, item.amount + item.fee) for item in items]
    # The hold of amount + fee, the uids drawn from the company's counter after the accounts, the entries,
    # withdrawals and events written: one call, one transaction (the caller's, or the ledger's own).
    numbered = ledger_hold_numbered(
        company_id=company.pk, holds=amounts, numbering=_uid_numbering(company), rows=rows
    )
    withdrawals, events = cast(tuple[list[Withdrawal], list[WebhookEvent]], numbered.rows)  # rows' own
    # The dispatcher, and one waiting message per code however many withdrawals (the planner batches them,
    # withdrawals.payouts), in one cache round trip. A lost message's work is found by the payout monitor.
    webhook_enqueue(events, also=[(PLAN_TASK, code) for code in codes])
    notify_withdrawals_accepted(withdrawals)  # those the payout policy holds for an approval
    return withdrawals


def insufficient_errors(
    exc: InsufficientBalance, items: Sequence[CheckedItem], field: Callable[[int], str]
) -> ValidationFailed:
    short = {shortfall.code: shortfall for shortfall in exc.shortfalls}
    errors = [
        FieldError(
            field(index),
            InsufficientBalance.code,
            f"{item.code} available {number_text(short[item.code].available)}, requested "
            f"{number_text(short[item.code].requested)} (amounts plus network fees)",
        )
        for index, item in enumerate(items)
        if item.code in short
    ]
    return ValidationFailed(errors, detail=exc.detail)


# --- (new) -> processing ----------------------------------------------------------------------------------


def withdrawal_items_check(items: Sequence[WithdrawalItem]) -> list[CheckedItem]:
    """Every rule of every item (not the balance); one ValidationFailed listing each failing `items[i]`."""
    if not items:
        raise ValidationFailed([FieldError("items", "empty", "at least one withdrawal item is required")])
    limit = settings.WITHDRAWAL_MAX_ITEMS
    if len(items) > limit:
        raise ValidationFailed(
            [FieldError("items", "too_many_items", f"at most {limit} items per call, got {len(items)}")]
        )
    checked: list[CheckedItem] = []
    errors: list[FieldError] = []
    for index, item in enumerate(items):
        ok, item_errors = check_item(item, prefix=f"items[{index}]")
        errors += item_errors
        if ok is not None:
            checked.append(ok)
    if errors:
        raise ValidationFailed(errors)
    return checked


def withdrawal_request(
    *,
    company: Company,
    items: Sequence[WithdrawalItem],
    on_accepted: Callable[[list[Withdrawal]], None] | None = None,
) -> list[Withdrawal]:
    """POST /api/transactions/withdraw: all items are accepted (held together, in one transaction, or for one
    item in autocommit by one statement) or none is.

    The rules are checked before the transaction opens (on SQLite a transaction holds the write lock);
    the balance of each code's sum is checked under the account locks, and a short code is reported on
    every item of that code. `on_accepted` runs inside the transaction (the Idempotency-Key layer stores
    the response there, so a stored response always means the withdrawals exist).
    """
    checked = withdrawal_items_check(items)
    # One item, no payout policy and no response to store with it, in autocommit: withdrawal_accept needs no
    # transaction (a caller's transaction gets a savepoint, so that a refusal leaves nothing in it).
    alone = on_accepted is None and len(checked) == 1 and not company.payout_policy_active
    alone = alone and not transaction.get_connection().in_atomic_block
    with contextlib.nullcontext() if alone else transaction.atomic():
        # LimitExceeded; before the accounts. None, and no query, when the company has no policy.
        holds = payout_policy_enforce(company=company, items=checked)
        request = None
        if len(checked) > 1:  # a bulk: its withdrawals point to one request row
            request = WithdrawalRequest.objects.create(company=company, item_count=len(checked))
        try:
            withdrawals = withdrawal_accept(company=company, items=checked, request=request, holds=holds)
        except InsufficientBalance as exc:
            raise insufficient_errors(exc, checked, lambda index: f"items[{index}].amount") from exc
        if on_accepted is not None:
            on_accepted(withdrawals)
    if request is None:
        log_objects(withdrawal_uid=withdrawals[0].uid)
    else:
        log_objects(withdrawal_request_id=request.pk)
    return withdrawals


def withdrawal_results(withdrawals: Sequence[Withdrawal]) -> list[dict[str, Any]]:
    """docs/api.md: the response entry of each accepted item, in request order."""
    return [{"message": ACCEPTED_MESSAGE, "success": True, "uid": w.uid} for w in withdrawals]


# --- processing: broadcast, complete, reject ------------------------------------------------------------


@transaction.atomic
def withdrawal_sent(*, uid: str, txid: str) -> Withdrawal | None:
    """processing -> processing (txid set): the node has its transaction; second processing webhook.

    Called by withdrawals.payouts once a stored transaction was accepted; again with a new txid when a
    replacement of it is. Returns early when the txid is already the one recorded.
    """
    withdrawal = _locked(uid)
    if withdrawal is None or withdrawal.status != Status.PROCESSING or withdrawal.txid == txid:
        return withdrawal
    withdrawal.txid = txid
    withdrawal.broadcast_at = timezone.now()
    withdrawal.blocked_reason = ""
    withdrawal.save(update_fields=["txid", "broadcast_at", "blocked_reason", "updated_at"])
    _publish(withdrawal, tx_hash=get_backend(withdrawal.code).explorer_url(withdrawal.code, txid))
    return withdrawal


@transaction.atomic
def withdrawal_unsent(*, uid: str) -> Withdrawal | None:
    """processing (txid set) -> processing (txid ""): its transaction can never be included (a TRON
    transaction past its expiration that the node does not have), so the next plan pays it with a new
    one, whose txid the next processing webhook carries. Returns early when no txid is recorded.
    """
    withdrawal = _locked(uid)
    if withdrawal is None or withdrawal.status != Status.PROCESSING or not withdrawal.txid:
        return withdrawal
    withdrawal.txid = ""
    withdrawal.broadcast_at = None
    withdrawal.save(update_fields=["txid", "broadcast_at", "updated_at"])
    return withdrawal


@transaction.atomic
def withdrawal_bounced(*, uid: str, reason: str) -> Withdrawal | None:
    """processing (txid set) -> processing (txid "", held for an approval): the recipient's account sent the
    payment back (TON: an undeployed wallet refuses a bounceable message), so nothing was paid. It waits
    with `reason` until the merchant approves sending it again (non-bounceable: withdrawals.bounces) or
    cancels it (withdrawals.approvals); a processing webhook without txHash says the earlier one paid
    nothing. Returns early when no txid is recorded."""
    withdrawal = _locked(uid)
    if withdrawal is None or withdrawal.status != Status.PROCESSING or not withdrawal.txid:
        return withdrawal
    withdrawal.txid = ""
    withdrawal.broadcast_at = None
    withdrawal.blocked_reason = reason[:255]
    withdrawal.approval_required = True
    withdrawal.approved_at = None
    withdrawal.save(
        update_fields=[
            "txid",
            "broadcast_at",
            "blocked_reason",
            "approval_required",
            "approved_at",
            "updated_at",
        ]
    )
    _publish(withdrawal)
    return withdrawal


@transaction.atomic
def withdrawal_complete(*, uid: str) -> Withdrawal:
    """processing (broadcast) -> done: the chain confirmed it; the hold leaves the balance."""
    withdrawal = _locked(uid)
    if withdrawal is None:
        raise NotFound("No such withdrawal.")
    if withdrawal.status == Status.DONE:
        return withdrawal
    target = _guard(withdrawal, "complete")
    if not withdrawal.txid:
        raise InvalidState("A withdrawal that was not broadcast cannot be done.")

    if withdrawal.company_id is None:
        assert withdrawal.refund_deposit_id is not None  # the database's withdrawal_merchant_or_house
        unrouted_refunded(deposit_id=withdrawal.refund_deposit_id, uid=withdrawal.uid)  # no balance held it
    else:
        ledger_post(
            company_id=withdrawal.company_id,
            code=withdrawal.code,
            amount=withdrawal.held_amount,
            reference=withdrawal.reference,
        )
    withdrawal.status = target
    withdrawal.settled_at = timezone.now()
    withdrawal.save(update_fields=["status", "settled_at", "updated_at"])
    _publish(withdrawal, tx_hash=explorer_link(withdrawal) or "")
    return withdrawal


def _reject(withdrawal: Withdrawal, reason: str) -> None:
    """The body of every move to rejected; the caller holds the row lock and checked the status."""
    target = _guard(withdrawal, "reject")
    if withdrawal.company_id is None:
        assert withdrawal.refund_deposit_id is not None  # the database's withdrawal_merchant_or_house
        unrouted_refund_failed(deposit_id=withdrawal.refund_deposit_id, uid=withdrawal.uid, reason=reason)
    else:
        ledger_release(
            company_id=withdrawal.company_id,
            code=withdrawal.code,
            amount=withdrawal.held_amount,
            reference=withdrawal.reference,
        )
    withdrawal.status = target
    withdrawal.reject_reason = reason[:255]
    withdrawal.settled_at = timezone.now()
    withdrawal.save(update_fields=["status", "reject_reason", "settled_at", "updated_at"])
    _publish(withdrawal)  # rejected webhooks carry no txHash


@transaction.atomic
def withdrawal_reject(*, uid: str, reason: str) -> Withdrawal:
    """processing -> rejected: failed or frozen on chain; the hold returns to the available balance."""
    withdrawal = _locked(uid)
    if withdrawal is None:
        raise NotFound("No such withdrawal.")
    if withdrawal.status == Status.REJECTED:
        return withdrawal
    _guard(withdrawal, "reject")
    _reject(withdrawal, reason)
    return withdrawal


@transaction.atomic
def withdrawal_sandbox_reject(*, company: Company | None, uid: str) -> Withdrawal:
    """POST /api/sandbox/withdrawals/<uid>/reject: force a processing sandbox withdrawal to rejected
    (`company` None: the house's own, by `manage.py sandbox reject`)."""
    withdrawal = _locked(uid)
    if withdrawal is None or withdrawal.company_id != (company.pk if company else None):
        raise NotFound("No such withdrawal.")
    if not is_sandbox(withdrawal.code):
        raise ValidationFailed(
            [FieldError("uid", UnsupportedAsset.code, f"{withdrawal.code} is not on the sandbox chain")]
        )
    _guard(withdrawal, "reject")
    if withdrawal.txid:
        # The simulated chain agrees: its transaction fails once mined, as a real failed one would.
        SandboxTransaction.objects.filter(
            kind=SandboxTransaction.Kind.WITHDRAWAL, reference=withdrawal.reference
        ).update(outcome=SandboxTransaction.Outcome.FAIL)
    _reject(withdrawal, "Rejected in the sandbox.")
    return withdrawal
