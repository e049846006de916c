"""The payout policy of a merchant (docs/security.md, "Payout policy"): limits, a new-address cool-down,
approvals above a threshold, and the payout address allowlist.

- Limits per payment code (`PayoutLimit`): at most `max_per_withdrawal` in one withdrawal and `max_per_day`
  in any rolling 24 hours. Amounts are net, as the merchant asks for them (what the receiver gets): the
  network fee is not counted, so a limit reads the same as the amounts typed into the forms and the API.
  The 24 hours count every withdrawal of the code that was not rejected. A request over a limit is refused
  whole (`LimitExceeded`: 400 `limit_exceeded`, the message names the limit) and nothing is written.
- Holds, stored on the withdrawal in the transaction that creates it: one to an address (and tag) the
  company never paid in that code waits `new_address_cooldown_hours` (`hold_until`) unless the address is
  on the allowlist; one above `approval_above` waits until approved (`approval_required`). The amount is
  held from the start; withdrawals.payouts plans only `released()` withdrawals, so a cool-down that ends
  is sent by the next planner run (beat's payout monitor, every WITHDRAWAL_POLL_SECONDS) without anyone
  doing anything.
- Who is subject: manual and bulk withdrawals (API and dashboard) and automatic sweeps (the limits cap a
  sweep; the cool-down and approvals hold it like any withdrawal). Invoice refunds are not: a refund sends
  back at most what the client paid into that invoice, credited in the same transaction, so it never
  spends the balance the policy protects.

Cost: `Company.payout_policy_active` is True exactly when the company has a rule (a limit, an approval
threshold or a cool-down); with it off the withdrawal path reads nothing here. Lock order, the one of
withdrawals.services with one lock in front: the company's `PayoutPolicy` row (only when a code of the
withdrawal has a 24-hour limit), then the accounts, then the uid counter. Under that row lock the 24-hour
sum is read and the withdrawal written in one transaction, so two concurrent withdrawals never both pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, localcontext
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.errors import FieldError, NotFound, ValidationFailed
from core.fields import MoneySum
from core.money import MONEY_CONTEXT, decimal_places, number_text
from core.wire import iso_utc
from payments.models import Company, Membership
from payments.roles import APPROVE, ROLES, may
from security.models import TotpDevice
from withdrawals.models import PayoutAddress, PayoutLimit, PayoutPolicy, Withdrawal
from withdrawals.rules import CheckedItem, check_asset, check_destination

LIMIT_EXCEEDED = "limit_exceeded"
SECOND_FACTOR_REQUIRED = "second_factor_required"
MAX_COOLDOWN_HOURS = 24 * 30
LABEL_MAX = PayoutAddress._meta.get_field("label").max_length or 100
NEW_ADDRESS, APPROVAL = "new_address", "approval"
APPROVER_ROLES = tuple(role for role in ROLES if may(role, APPROVE))
Status = Withdrawal.Status


def _now() -> datetime:
    """The clock of the holds and the 24-hour window (tests move it)."""
    return timezone.now()


def policy_now() -> datetime:
    """`_now` for the other modules (a test that moves `_now` moves theirs too)."""
    return _now()


class LimitExceeded(ValidationFailed):
    """A withdrawal over a limit of the payout policy: 400 `limit_exceeded`, every failing item listed."""

    def __init__(self, errors: Sequence[FieldError], detail: str | None = None) -> None:
        super().__init__(errors, detail)
        self.code = LIMIT_EXCEEDED


@dataclass(frozen=True)
class Hold:
    """What a new withdrawal waits for: the end of its cool-down, an approval, or both."""

    until: datetime | None = None
    approval: bool = False


# --- the withdrawal path ----------------------------------------------------------------------------------


@dataclass
class Policy:
    """The rules of one company for the codes of one withdrawal request, read (and locked) once."""

    company: Company
    cooldown_hours: int
    limits: dict[str, PayoutLimit]
    used: dict[str, Decimal]  # the last 24 hours' sums of the codes with a daily limit

    def limit_errors(self, items: Sequence[CheckedItem], field: Callable[[int], str]) -> list[FieldError]:
        """Each item over its code's per-withdrawal limit; every item of a code whose items together would
        take the last 24 hours over its daily limit."""
        errors: dict[int, FieldError] = {}
        totals: dict[str, Decimal] = {}
        with localcontext(MONEY_CONTEXT):
            for index, item in enumerate(items):
                limit = self.limits.get(item.code)
                if limit is None:
                    continue
                one = limit.max_per_withdrawal
                if one is not None and item.amount > one:
                    errors[index] = FieldError(
                        field(index),
                        LIMIT_EXCEEDED,
                        f"{number_text(item.amount)} {item.code} is over your limit of {number_text(one)} "
                        f"{item.code} per withdrawal",
                    )
                totals[item.code] = totals.get(item.code, Decimal(0)) + item.amount
            for code, total in totals.items():
                day = self.limits[code].max_per_day
                used = self.used.get(code, Decimal(0))
                if day is None or used + total <= day:
                    continue
                message = (
                    f"over your limit of {number_text(day)} {code} per 24 hours: {number_text(used)} {code} "
                    f"sent or on the way in the last 24 hours, {number_text(total)} {code} more asked "
                    "(amounts without network fees)"
                )
                for index, item in enumerate(items):
                    if item.code == code and index not in errors:
                        errors[index] = FieldError(field(index), LIMIT_EXCEEDED, message)
        return [errors[index] for index in sorted(errors)]

    def allowance(self, code: str) -> Decimal | None:
        """The most one withdrawal of `code` may send now; None when no limit applies."""
        limit = self.limits.get(code)
        if limit is None:
            return None
        caps = [] if limit.max_per_withdrawal is None else [limit.max_per_withdrawal]
        if limit.max_per_day is not None:
            with localcontext(MONEY_CONTEXT):
                caps.append(max(limit.max_per_day - self.used.get(code, Decimal(0)), Decimal(0)))
        return min(caps) if caps else None

    def holds(self, items: Sequence[CheckedItem]) -> list[Hold | None]:
        """The hold of each item (None: sent as soon as the planner gets to it)."""
        until = _now() + timedelta(hours=self.cooldown_hours) if self.cooldown_hours else None
        new = _new_destinations(self.company, items) if until is not None else set()
        holds: list[Hold | None] = []
        for item in items:
            limit = self.limits.get(item.code)
            approval = bool(limit and limit.approval_above is not None and item.amount > limit.approval_above)
            wait = until if (item.code, item.to, item.tag) in new else None
            holds.append(Hold(wait, approval) if wait is not None or approval else None)
        return holds


def payout_policy_read(*, company: Company, codes: Sequence[str], lock: bool) -> Policy | None:
    """The company's rules for `codes`, None when it has none (and then no query was made). With `lock`,
    inside the caller's transaction and before any account lock: the policy row is locked when one of the
    codes has a 24-hour limit, before the sums are read (READ COMMITTED: the sum then sees every withdrawal
    committed by the previous holder of the lock)."""
    if not company.payout_policy_active:
        return None
    limits = {
        limit.code: limit for limit in PayoutLimit.objects.filter(company=company, code__in=list(codes))
    }
    daily = sorted(code for code, limit in limits.items() if limit.max_per_day is not None)
    rows = PayoutPolicy.objects.filter(company=company)
    if lock and daily:
        rows = rows.select_for_update()
    row = rows.first()
    used: dict[str, Decimal] = {}
    if daily:
        since = _now() - timedelta(hours=24)
        sums = (
            Withdrawal.objects.filter(company=company, code__in=daily, created_at__gte=since)
            .exclude(status=Status.REJECTED)
            .values("code")
            .annotate(total=MoneySum("amount"))
            .order_by()
        )
        used = {row["code"]: row["total"] or Decimal(0) for row in sums}
    cooldown = row.new_address_cooldown_hours if row is not None else 0
    return Policy(company=company, cooldown_hours=cooldown, limits=limits, used=used)


def payout_policy_enforce(
    *,
    company: Company,
    items: Sequence[CheckedItem],
    field: Callable[[int], str] = lambda index: f"items[{index}].amount",
) -> list[Hold | None] | None:
    """Inside the withdrawal's transaction, before any account lock: LimitExceeded when an item is over a
    limit, else the holds of the items for withdrawal_accept (None: the company has no policy)."""
    policy = payout_policy_read(company=company, codes=sorted({item.code for item in items}), lock=True)
    if policy is None:
        return None
    errors = policy.limit_errors(items, field)
    if errors:
        raise LimitExceeded(errors)
    return policy.holds(items)


def payout_policy_preview(
    *, company: Company, items: Sequence[CheckedItem], field: Callable[[int], str]
) -> tuple[list[FieldError], list[Hold | None]]:
    """What payout_policy_enforce would say now, without a lock (the dashboard's confirmation page)."""
    policy = payout_policy_read(company=company, codes=sorted({item.code for item in items}), lock=False)
    if policy is None:
        return [], [None] * len(items)
    return policy.limit_errors(items, field), policy.holds(items)


def _new_destinations(company: Company, items: Sequence[CheckedItem]) -> set[tuple[str, str, str]]:
    """The (code, address, tag) of the items that are neither on the allowlist nor paid before: a done
    withdrawal, or a processing one whose own cool-down is over (one still cooling down proves nothing)."""
    wanted = {(item.code, item.to, item.tag) for item in items}
    codes = sorted({code for code, _, _ in wanted})
    addresses = sorted({address for _, address, _ in wanted})
    allowed = PayoutAddress.objects.filter(company=company, code__in=codes, address__in=addresses)
    known = set(allowed.values_list("code", "address", "tag"))
    cooled = Q(hold_until__isnull=True) | Q(hold_until__lte=_now())
    paid = Withdrawal.objects.filter(company=company, code__in=codes, to_address__in=addresses).filter(
        Q(status=Status.DONE) | (Q(status=Status.PROCESSING) & cooled)
    )
    known |= set(paid.values_list("code", "to_address", "tag").distinct())
    return wanted - known


def holds_apply(withdrawals: Sequence[Withdrawal], holds: Sequence[Hold | None]) -> None:
    """Onto the unsaved withdrawals of withdrawal_accept, before they are written."""
    for withdrawal, hold in zip(withdrawals, holds, strict=True):
        if hold is not None:
            withdrawal.hold_until = hold.until
            withdrawal.approval_required = hold.approval


def released(now: datetime | None = None) -> Q:
    """Withdrawals nothing holds any more (withdrawals.payouts plans only these)."""
    now = now or _now()
    return (Q(hold_until__isnull=True) | Q(hold_until__lte=now)) & (
        Q(approval_required=False) | Q(approved_at__isnull=False)
    )


def hold_reasons(withdrawal: Withdrawal, now: datetime | None = None) -> list[str]:
    """What a processing withdrawal still waits for: "new_address", "approval"; [] for nothing."""
    if withdrawal.status != Status.PROCESSING or withdrawal.txid:
        return []
    now = now or _now()
    reasons = []
    if withdrawal.hold_until is not None and withdrawal.hold_until > now:
        reasons.append(NEW_ADDRESS)
    if withdrawal.approval_required and withdrawal.approved_at is None:
        reasons.append(APPROVAL)
    return reasons


def hold_body(withdrawal: Withdrawal) -> dict[str, Any] | None:
    """The API's `hold` of a withdrawal: null when nothing holds it (docs/api.md)."""
    reasons = hold_reasons(withdrawal)
    if not reasons:
        return None
    until = withdrawal.hold_until if NEW_ADDRESS in reasons else None
    return {"reasons": reasons, "until": iso_utc(until) if until is not None else None}


# --- the policy's settings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LimitInput:
    """The limits of one payment code as the merchant sets them; None is no limit."""

    max_per_withdrawal: Decimal | None = None
    max_per_day: Decimal | None = None
    approval_above: Decimal | None = None

    @property
    def is_empty(self) -> bool:
        return self.max_per_withdrawal is None and self.max_per_day is None and self.approval_above is None


LIMIT_FIELDS = ("max_per_withdrawal", "max_per_day", "approval_above")


def payout_policy_check(
    *, company: Company, cooldown_hours: int, limits: Mapping[str, LimitInput]
) -> tuple[dict[str, LimitInput], list[FieldError]]:
    """Every rule of a policy change (the dashboard form shows these errors): the limits by payment code,
    and the errors named `new_address_cooldown_hours` and `limits.<code>.<field>`."""
    errors: list[FieldError] = []
    if not 0 <= cooldown_hours <= MAX_COOLDOWN_HOURS:
        errors.append(
            FieldError(
                "new_address_cooldown_hours", "invalid", f"from 0 to {MAX_COOLDOWN_HOURS} hours (30 days)"
            )
        )
    checked: dict[str, LimitInput] = {}
    second_factor: bool | None = None
    for key, limit in limits.items():
        asset, asset_errors = check_asset(key, field=f"limits.{key}")
        errors += asset_errors
        if asset is None:
            continue
        for name in LIMIT_FIELDS:
            value = getattr(limit, name)
            field = f"limits.{asset.code}.{name}"
            if value is None:
                continue
            if not value.is_finite() or value <= 0:
                errors.append(FieldError(field, "invalid", "must be greater than 0, or empty for no limit"))
            elif decimal_places(value) > asset.amount_decimals:
                message = f"{asset.code} amounts have at most {asset.amount_decimals} decimals"
                errors.append(FieldError(field, "invalid", message))
        if limit.approval_above is not None:
            if second_factor is None:
                second_factor = _an_approver_has_totp(company)
            if not second_factor:
                errors.append(
                    FieldError(
                        f"limits.{asset.code}.approval_above",
                        SECOND_FACTOR_REQUIRED,
                        "turn on two-factor authentication first: approvals are confirmed with a code "
                        "from the approver's authenticator app, and no owner, admin or finance member "
                        "has one",
                    )
                )
        checked[asset.code] = limit
    return checked, errors


def _an_approver_has_totp(company: Company) -> bool:
    """Someone can approve: a member who may (APPROVER_ROLES) logs in with an authenticator."""
    approvers = Membership.objects.filter(company=company, role__in=APPROVER_ROLES).values("user_id")
    return TotpDevice.objects.filter(user_id__in=approvers, is_confirmed=True).exists()


@transaction.atomic
def payout_policy_set(
    *, company: Company, cooldown_hours: int, limits: Mapping[str, LimitInput]
) -> list[str]:
    """Save the cool-down and the limits of the codes named (others stay as they are); returns what changed,
    in words, for the audit log. Keeps `Company.payout_policy_active` True exactly when a rule exists."""
    checked, errors = payout_policy_check(company=company, cooldown_hours=cooldown_hours, limits=limits)
    if errors:
        raise ValidationFailed(errors)
    # The row withdrawals with a 24-hour limit lock: it exists whenever a limit does.
    policy, _ = PayoutPolicy.objects.select_for_update().get_or_create(company=company)
    changes: list[str] = []
    if policy.new_address_cooldown_hours != cooldown_hours:
        changes.append(f"cool-down {policy.new_address_cooldown_hours} h -> {cooldown_hours} h")
        policy.new_address_cooldown_hours = cooldown_hours
        policy.save(update_fields=["new_address_cooldown_hours", "updated_at"])
    current = {limit.code: limit for limit in PayoutLimit.objects.filter(company=company)}
    for code, limit in sorted(checked.items()):
        row = current.get(code)
        before = LimitInput(*(getattr(row, name) for name in LIMIT_FIELDS)) if row else LimitInput()
        if before == limit:
            continue
        changes += [
            f"{code} {name} {_text(getattr(before, name))} -> {_text(getattr(limit, name))}"
            for name in LIMIT_FIELDS
            if getattr(before, name) != getattr(limit, name)
        ]
        if limit.is_empty:
            PayoutLimit.objects.filter(company=company, code=code).delete()
        else:
            values = {name: getattr(limit, name) for name in LIMIT_FIELDS}
            PayoutLimit.objects.update_or_create(company=company, code=code, defaults=values)
    active = cooldown_hours > 0 or PayoutLimit.objects.filter(company=company).exists()
    if active != company.payout_policy_active:
        Company.objects.filter(pk=company.pk).update(payout_policy_active=active)
        company.payout_policy_active = active
    return changes


def _text(value: Decimal | None) -> str:
    return "none" if value is None else number_text(value)


def payout_address_add(*, company: Company, code: str, address: str, tag: str, label: str) -> PayoutAddress:
    """Put an address on the allowlist: checked as a withdrawal's destination (network, tag)."""
    asset, errors = check_asset(code, field="asset")
    if asset is None:
        raise ValidationFailed(errors)
    stored, errors = check_destination(asset, address, tag, address_field="address", tag_field="tag")
    label = label.strip()
    if len(label) > LABEL_MAX:
        errors.append(FieldError("label", "invalid", f"at most {LABEL_MAX} characters"))
    if errors:
        raise ValidationFailed(errors)
    tag = tag.strip() if asset.tag_required else ""
    with transaction.atomic():
        entry, created = PayoutAddress.objects.get_or_create(
            company=company, code=asset.code, address=stored, tag=tag, defaults={"label": label}
        )
    if not created:
        raise ValidationFailed(
            [FieldError("address", "duplicate", "this address is on the allowlist already")]
        )
    return entry


def payout_address_remove(*, company: Company, address_id: int) -> PayoutAddress:
    entry = PayoutAddress.objects.filter(company=company, pk=address_id).first()
    if entry is None:
        raise NotFound("No such address on your allowlist.")
    entry.delete()
    return entry


def payout_addresses_list(*, company: Company) -> list[PayoutAddress]:
    return list(PayoutAddress.objects.filter(company=company).order_by("code", "added_at", "pk"))


def payout_policy_get(*, company: Company) -> tuple[int, dict[str, PayoutLimit]]:
    """The cool-down in hours and the limits by payment code, as saved."""
    row = PayoutPolicy.objects.filter(company=company).first()
    limits = {limit.code: limit for limit in PayoutLimit.objects.filter(company=company)}
    return (row.new_address_cooldown_hours if row else 0), limits
