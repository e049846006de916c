"""Reads of the security app, always scoped by company or user."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from django.db.models import QuerySet

from payments.models import Company, Membership
from security.models import AuditEvent

# What the audit log shows for an action; an action not listed shows as recorded.
ACTION_LABELS = {
    "login.success": "Logged in",
    "login.fail": "Failed log-in",
    "logout": "Logged out",
    "logout.idle": "Logged out (idle)",
    "stepup.confirm": "Confirmed identity",
    "stepup.fail": "Failed identity confirmation",
    "2fa.enable": "Two-factor authentication enabled",
    "2fa.disable": "Two-factor authentication disabled",
    "recovery_code.use": "Recovery code used",
    "recovery_codes.regenerate": "Recovery codes regenerated",
    "token.rotate": "API token rotated",
    "token.create": "API token created",
    "token.revoke": "API token revoked",
    "secret.reveal": "Signing secret revealed",
    "secret.rotate": "Signing secret rotated",
    "secret.set": "Signing secret set",
    "webhook_url.set": "Webhook URL changed",
    "withdrawal.create": "Withdrawal requested",
    "withdrawal.bulk": "Bulk withdrawal requested",
    "withdrawal.approve": "Withdrawal approved",
    "withdrawal.cancel": "Held withdrawal cancelled",
    "payout_policy.change": "Payout policy changed",
    "auto_withdrawal.change": "Auto-withdrawal changed",
    "payout_address.add": "Payout address added",
    "payout_address.remove": "Payout address removed",
    "static_deposit_matching.change": "Static address e-mail matching changed",
    "security.require_2fa": "Two-factor requirement for members changed",
}


def action_label(action: str) -> str:
    return ACTION_LABELS.get(action, action)


def _utc_midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def audit_event_list_for_company(
    *,
    company: Company,
    user_id: int | None = None,
    action: str | None = None,
    since: date | None = None,
    until: date | None = None,
) -> QuerySet[AuditEvent]:
    """The company's log, newest first (served by audit_company_newest), with who did each action; narrowed
    to one member, one action, and the UTC days from `since` to `until`, both included."""
    events = AuditEvent.objects.filter(company=company)
    if user_id is not None:
        events = events.filter(user_id=user_id)
    if action:
        events = events.filter(action=action)
    if since is not None:
        events = events.filter(created_at__gte=_utc_midnight(since))
    if until is not None:
        events = events.filter(created_at__lt=_utc_midnight(until + timedelta(days=1)))
    return events.select_related("user").order_by("-created_at", "-pk")


def audit_member_choices(*, company: Company) -> list[tuple[int, str]]:
    """(user id, e-mail) of the company's members, for the log's member filter."""
    members = Membership.objects.filter(company=company).select_related("user").order_by("user__email")
    return [(member.user_id, member.user.email) for member in members]
