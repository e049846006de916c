"""Dashboard withdrawals go through a confirmation page and are sent once (docs/security.md, "Dashboard
payouts").

The single and the bulk form check their items and store them as a `PayoutDraft` with a random token; the
confirmation page shows that draft, and its form carries only the token, so what is sent is exactly what
was shown. `payout_draft_send` locks the draft's row, sends its items with withdrawal_request (the same path
as the API: rules, payout policy, balance, all or nothing) and records the uids with `sent_at`, in one
transaction. Any other submission of the token (a double click, the back button and resend, a second tab)
waits for that lock and finds the draft sent: it is shown what was sent and nothing more is created. A
refused send (a balance short by then, a limit) rolls back and leaves the draft to be sent again. Drafts
are kept IDEMPOTENCY_TTL_HOURS, like the API's Idempotency-Keys, and purged with them.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal, localcontext

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import FieldError, NotFound, ValidationFailed
from core.money import MONEY_CONTEXT
from payments.ledger import InsufficientBalance, Shortfall
from payments.models import Company
from payments.selectors import balance_list_for_company
from withdrawals.models import PayoutDraft, Withdrawal
from withdrawals.policy import Hold, LimitExceeded, payout_policy_preview
from withdrawals.rules import CheckedItem, WithdrawalItem
from withdrawals.services import insufficient_errors, withdrawal_items_check, withdrawal_request

Kind = PayoutDraft.Kind


def _item_field(index: int) -> str:
    return f"items[{index}].amount"


@dataclass
class DraftLine:
    item: CheckedItem
    hold: Hold | None

    @property
    def total(self) -> Decimal:
        with localcontext(MONEY_CONTEXT):
            return self.item.amount + self.item.fee


@dataclass
class CodeTotal:
    """Per code: what the items hold (amounts plus one network fee each) beside what is available."""

    code: str
    count: int = 0
    amount: Decimal = Decimal(0)
    fees: Decimal = Decimal(0)
    available: Decimal = Decimal(0)

    @property
    def total(self) -> Decimal:
        with localcontext(MONEY_CONTEXT):
            return self.amount + self.fees

    @property
    def is_short(self) -> bool:
        return self.total > self.available


@dataclass
class DraftSummary:
    lines: list[DraftLine] = field(default_factory=list)
    totals: list[CodeTotal] = field(default_factory=list)
    errors: list[FieldError] = field(default_factory=list)  # what sending would refuse now

    @property
    def held_count(self) -> int:
        return sum(1 for line in self.lines if line.hold is not None)


def code_totals(company: Company, items: Sequence[CheckedItem]) -> list[CodeTotal]:
    available = {row["code"]: row["available"] for row in balance_list_for_company(company=company)}
    totals: dict[str, CodeTotal] = {}
    with localcontext(MONEY_CONTEXT):
        for item in items:
            total = totals.setdefault(item.code, CodeTotal(item.code, available=available[item.code]))
            total.count += 1
            total.amount += item.amount
            total.fees += item.fee
    return list(totals.values())


def _balance_errors(
    totals: Sequence[CodeTotal], items: Sequence[CheckedItem], field: Callable[[int], str]
) -> list[FieldError]:
    short = [Shortfall(t.code, t.available, t.total) for t in totals if t.is_short]
    return insufficient_errors(InsufficientBalance(shortfalls=short), items, field).errors if short else []


def payout_draft_check(*, company: Company, items: Sequence[WithdrawalItem]) -> list[CheckedItem]:
    """What sending would refuse now, before a draft is made: the rules (ValidationFailed), the payout
    policy's limits (LimitExceeded) and the available balance (`insufficient_balance`). Sending checks all
    of it again, under the locks."""
    checked = withdrawal_items_check(items)
    limit_errors, _ = payout_policy_preview(company=company, items=checked, field=_item_field)
    if limit_errors:
        raise LimitExceeded(limit_errors)
    errors = _balance_errors(code_totals(company, checked), checked, _item_field)
    if errors:
        raise ValidationFailed(errors)
    return checked


def payout_draft_summary(*, company: Company, draft: PayoutDraft) -> DraftSummary:
    """The confirmation page: every item with its fee and what would hold it, the totals per code, and
    what sending would refuse now (nothing is locked or written)."""
    try:
        checked = withdrawal_items_check(draft_items(draft))
    except ValidationFailed as exc:  # an asset switched off since the draft was made, say
        return DraftSummary(errors=exc.errors)
    errors, holds = payout_policy_preview(company=company, items=checked, field=_item_field)
    totals = code_totals(company, checked)
    errors += _balance_errors(totals, checked, _item_field)
    lines = [DraftLine(item, hold) for item, hold in zip(checked, holds, strict=True)]
    return DraftSummary(lines=lines, totals=totals, errors=errors)


def payout_draft_create(
    *, company: Company, kind: str, items: Sequence[WithdrawalItem], skipped: int = 0
) -> PayoutDraft:
    """A draft of checked items (the caller ran withdrawal_items_check); nothing is held yet."""
    rows = [{"asset": i.asset, "to": i.to, "amount": str(i.amount), "tag": i.tag} for i in items]
    return PayoutDraft.objects.create(
        token=secrets.token_urlsafe(32), company=company, kind=kind, items=rows, skipped=skipped
    )


def payout_draft_get(*, company: Company, token: str) -> PayoutDraft:
    cutoff = timezone.now() - timedelta(hours=settings.IDEMPOTENCY_TTL_HOURS)
    draft = PayoutDraft.objects.filter(company=company, token=token, created_at__gte=cutoff).first()
    if draft is None:
        raise NotFound("This confirmation is unknown or has expired.")  # another merchant's too
    return draft


def draft_items(draft: PayoutDraft) -> list[WithdrawalItem]:
    return [
        WithdrawalItem(asset=row["asset"], to=row["to"], amount=Decimal(row["amount"]), tag=row["tag"])
        for row in draft.items
    ]


def payout_draft_send(*, company: Company, token: str) -> tuple[PayoutDraft, bool]:
    """Send the draft's items unless it was sent: (the draft, True when this call sent it). Raises what
    withdrawal_request raises (ValidationFailed, LimitExceeded) having sent nothing."""
    with transaction.atomic():
        draft = payout_draft_get(company=company, token=token)
        # The draft's lock, before the policy row and the accounts: only submissions of this draft wait here.
        draft = PayoutDraft.objects.select_for_update().get(pk=draft.pk)
        if draft.sent_at is not None:
            return draft, False
        withdrawals = withdrawal_request(company=company, items=draft_items(draft))
        draft.uids = [withdrawal.uid for withdrawal in withdrawals]
        draft.sent_at = timezone.now()
        draft.save(update_fields=["uids", "sent_at"])
    return draft, True


def draft_withdrawals(draft: PayoutDraft) -> list[Withdrawal]:
    """The withdrawals a sent draft created, in its order."""
    by_uid = {w.uid: w for w in Withdrawal.objects.filter(company_id=draft.company_id, uid__in=draft.uids)}
    return [by_uid[uid] for uid in draft.uids if uid in by_uid]


def payout_drafts_purge() -> int:
    """Beat (with the Idempotency-Keys): drop drafts past their IDEMPOTENCY_TTL_HOURS; returns how many."""
    cutoff = timezone.now() - timedelta(hours=settings.IDEMPOTENCY_TTL_HOURS)
    deleted, _ = PayoutDraft.objects.filter(created_at__lt=cutoff).delete()
    return deleted
