"""What the merchant does with a withdrawal the payout policy holds (withdrawals.policy): approve it, or
cancel it.

Approving records `approved_at` (the withdrawal stays processing, as every state before done or rejected)
and wakes the planner; it is sent once its cool-down, if any, is over too. Cancelling is the ordinary
reject transition (withdrawals.services.withdrawal_reject): the hold returns to the available balance and
the rejected webhook goes out. Only a withdrawal that is still held can be cancelled: once released, the
planner may be sending it. The second factor (an authenticator code to approve, a step-up to cancel) is the
dashboard's to ask for; these functions trust their caller with it.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from chains.models import ChainTxStatus
from core.errors import Forbidden, InvalidState, NotFound
from core.wakeup import wake_on_commit
from payments.models import Company, Membership
from withdrawals.bounces import bounce_decided
from withdrawals.models import Withdrawal, WithdrawalTx
from withdrawals.policy import APPROVAL, APPROVER_ROLES, hold_reasons, policy_now
from withdrawals.services import PLAN_TASK, withdrawal_reject

CANCEL_REASON = "Cancelled by the merchant while it was held."
OWN_WITHDRAWAL = "own_withdrawal"


class OwnWithdrawal(Forbidden):
    """The maker of a withdrawal asked to approve it while another member may: 403 `own_withdrawal`."""

    code = OWN_WITHDRAWAL


def _locked_for(company: Company, uid: str) -> Withdrawal:
    withdrawal = Withdrawal.objects.select_for_update().filter(company=company, uid=uid).first()
    if withdrawal is None:
        raise NotFound("No such withdrawal.")  # another merchant's too
    return withdrawal


def maker_may_approve(company: Company, withdrawal: Withdrawal, approver: Any) -> bool:
    """`approver` may approve `withdrawal` as far as four eyes go: not its maker, or its maker while no other
    member may approve."""
    if withdrawal.requested_by_id is None or withdrawal.requested_by_id != approver.pk:
        return True
    others = Membership.objects.filter(company=company, role__in=APPROVER_ROLES)
    return not others.exclude(user_id=approver.pk).exists()


@transaction.atomic
def withdrawal_approve(*, company: Company, uid: str, approver: Any = None) -> Withdrawal:
    """A held withdrawal waiting for an approval gets it; returns early when it was approved already.
    `approver` is the member approving (the dashboard); None is a caller acting for the house (tests, the
    command line), to whom the four-eyes rule does not apply."""
    withdrawal = _locked_for(company, uid)
    if withdrawal.approved_at is not None:
        return withdrawal
    if APPROVAL not in hold_reasons(withdrawal):
        raise InvalidState("This withdrawal does not wait for an approval.")
    if approver is not None:
        role = Membership.objects.filter(company=company, user_id=approver.pk).values_list("role", flat=True)
        if role.first() not in APPROVER_ROLES:
            raise Forbidden("Only an owner, an admin or a finance member approves withdrawals.")
        if not maker_may_approve(company, withdrawal, approver):
            raise OwnWithdrawal(
                "You made this withdrawal: another member who may approve (owner, admin or finance) "
                "approves it."
            )
    withdrawal.approved_at = policy_now()
    withdrawal.save(update_fields=["approved_at", "updated_at"])
    bounce_decided(withdrawal)
    wake_on_commit(PLAN_TASK, withdrawal.code)
    return withdrawal


@transaction.atomic
def withdrawal_cancel(*, company: Company, uid: str) -> Withdrawal:
    """processing (held) -> rejected, by the merchant; returns early when it was rejected already."""
    withdrawal = _locked_for(company, uid)
    if withdrawal.status == Withdrawal.Status.REJECTED and withdrawal.reject_reason == CANCEL_REASON:
        return withdrawal
    live = WithdrawalTx.objects.filter(
        withdrawal=withdrawal, chain_tx__status__in=[ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST]
    )
    if not hold_reasons(withdrawal) or live.exists():
        raise InvalidState("Only a withdrawal that is still held can be cancelled.")
    bounce_decided(withdrawal)
    return withdrawal_reject(uid=withdrawal.uid, reason=CANCEL_REASON)


def withdrawals_made_by(*, company: Company, uids: list[str], user_id: int | None) -> None:
    """Record `user` as the maker of the company's withdrawals `uids`, in the transaction that made them
    (the dashboard's confirmation)."""
    Withdrawal.objects.filter(company=company, uid__in=uids).update(requested_by_id=user_id)
