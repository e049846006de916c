"""Reads of the security app, always scoped by company or user."""

from __future__ import annotations

from django.db.models import QuerySet

from payments.models import Company
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
}


def action_label(action: str) -> str:
    return ACTION_LABELS.get(action, action)


def audit_event_list_for_company(*, company: Company) -> QuerySet[AuditEvent]:
    """The company's log, newest first (served by audit_company_newest)."""
    return AuditEvent.objects.filter(company=company).order_by("-created_at", "-pk")
