"""The notify_* hooks: called by the services that change state, in their transaction, each writes the
outbox rows of its event (one per recipient, never two: `notification_once`) and enqueues their sending
once that transaction commits. A rolled-back change mails nobody.

This app stands above payments and below the apps that call it: it never imports invoices, withdrawals,
chains or security, so the objects they hand over are read by their attributes. With e-mail off
(EMAIL_URL=off) nothing is written. No secret ever enters a row: a token's mail names it, never its text.
"""

from __future__ import annotations

import hashlib
import ipaddress
import uuid
from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone, translation

from core.assets import get_asset
from core.enqueue import TaskRef
from core.money import number_text
from core.throttle import client_ip
from notifications.models import ClientLanguage, Kind, KnownDevice, Notification
from notifications.preferences import language_or_default, receipts_enabled, recipients

SEND_TASK = TaskRef[[str]]("notifications.tasks.notification_send")
DEVICE_MEMORY_DAYS = 90


def _amount(value: Decimal | None, code: str) -> str:
    if value is None or not code:
        return ""
    return f"{number_text(value)} {get_asset(code).base.upper()}"


def _link(route: str, *args: Any) -> str:
    return f"{settings.BASE_URL}{reverse(route, args=args)}"


def notifications_write(
    *, kind: str, company_id: Any, event_key: str, to: Sequence[tuple[str, str]], context: dict[str, Any]
) -> list[Notification]:
    """In the caller's transaction: one row per (event, recipient) not written before; sent after commit."""
    if not settings.EMAIL_ENABLED or not to:
        return []
    now = timezone.now()
    rows = [
        Notification(
            id=uuid.uuid4(),
            event_key=event_key[:200],
            kind=kind,
            company_id=company_id,
            recipient=email,
            language=language,
            context=context,
            next_attempt_at=now,
        )
        for email, language in to
    ]
    # A second write of the same event (a replayed hook) inserts nothing; its ids are simply never found.
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
    for row in rows:
        SEND_TASK.delay_on_commit(str(row.pk))
    return rows


def _members(kind: str, company_id: Any, event_key: str, context: dict[str, Any]) -> None:
    to = recipients(company_id=company_id, kind=kind)
    notifications_write(kind=kind, company_id=company_id, event_key=event_key, to=to, context=context)


def notify_invoice_changed(invoice: Any) -> None:
    """invoices.services: every status change of an invoice (paid, needing a decision; a filled one
    remembers the pay page's language for the client's receipt)."""
    if not settings.EMAIL_ENABLED:
        return
    status = invoice.status
    if status == "pending" and invoice.client_email and receipts_enabled(company_id=invoice.company_id):
        language = language_or_default(translation.get_language())
        ClientLanguage.objects.update_or_create(invoice_id=invoice.pk, defaults={"language": language})
    if status not in ("done", "wrong"):
        return
    context = {
        "invoice_id": str(invoice.pk),
        "company": invoice.company.name,
        "total": f"{number_text(invoice.total)} {invoice.invoice_currency.upper()}",
        "amount_due": _amount(invoice.amount_due, invoice.payment_code),
        "paid": _amount(invoice.paid_amount, invoice.payment_code),
        "overpaid": bool(invoice.is_overpaid),
        "link": _link("dashboard:invoice_detail", invoice.pk),
    }
    kind = Kind.INVOICE_PAID if status == "done" else Kind.INVOICE_DECISION
    _members(kind, invoice.company_id, f"{kind}:{invoice.pk}", context)
    if status == "done" and invoice.client_email and receipts_enabled(company_id=invoice.company_id):
        saved = ClientLanguage.objects.filter(invoice_id=invoice.pk).values_list("language", flat=True)
        to = [(invoice.client_email, language_or_default(saved.first()))]
        receipt = {**context, "link": f"{settings.PAY_URL}/{invoice.pk}"}
        notifications_write(
            kind=Kind.RECEIPT,
            company_id=invoice.company_id,
            event_key=f"receipt:{invoice.pk}",
            to=to,
            context=receipt,
        )


def _withdrawal_context(withdrawal: Any) -> dict[str, Any]:
    return {
        "uid": withdrawal.uid,
        "amount": _amount(withdrawal.amount, withdrawal.code),
        "network": get_asset(withdrawal.code).label,
        "to": withdrawal.to_address,
        "txid": withdrawal.txid,
        "reason": withdrawal.reject_reason or withdrawal.blocked_reason,
        "link": _link("dashboard:withdrawal_detail", withdrawal.uid),
    }


def notify_withdrawal_changed(withdrawal: Any) -> None:
    """withdrawals.services: a merchant's withdrawal done, rejected, or sent back and held for approval."""
    if withdrawal.company_id is None or not settings.EMAIL_ENABLED:
        return
    if withdrawal.status == "done":
        kind = Kind.WITHDRAWAL_DONE
    elif withdrawal.status == "rejected":
        kind = Kind.WITHDRAWAL_REJECTED
    elif withdrawal.approval_required and withdrawal.approved_at is None and not withdrawal.txid:
        kind = Kind.WITHDRAWAL_HELD
    else:
        return
    _members(kind, withdrawal.company_id, f"{kind}:{withdrawal.uid}", _withdrawal_context(withdrawal))


def notify_withdrawals_accepted(withdrawals: Sequence[Any]) -> None:
    """withdrawals.services.withdrawal_accept: the new ones the payout policy holds for an approval."""
    for withdrawal in withdrawals:
        if withdrawal.approval_required:
            notify_withdrawal_changed(withdrawal)


def notify_deposit_reversed(deposit: Any) -> None:
    """chains.deposit_reversals: a credited deposit the chain took back (once per reversal)."""
    if deposit.company_id is None or not settings.EMAIL_ENABLED:
        return
    context = {
        "amount": _amount(deposit.amount, deposit.code),
        "network": get_asset(deposit.code).label,
        "txid": deposit.txid,
        "output": deposit.output_index,
        "reversed_at": deposit.reversed_at.isoformat() if deposit.reversed_at else "",
    }
    key = f"{Kind.DEPOSIT_REVERSED}:{deposit.pk}:{context['reversed_at']}"
    _members(Kind.DEPOSIT_REVERSED, deposit.company_id, key, context)


def notify_token_created(token: Any) -> None:
    """payments.tokens.token_created_hooks: its name and scopes; never its text, nor its prefix."""
    context = {"name": token.name, "scopes": " ".join(token.scopes), "link": _link("dashboard:api_tokens")}
    _members(Kind.TOKEN_CREATED, token.company_id, f"{Kind.TOKEN_CREATED}:{token.pk}", context)


def _network(ip: str) -> str:
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return "unknown"
    prefix = 24 if address.version == 4 else 48
    return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))


def notify_login(sender: Any, request: Any = None, user: Any = None, **kwargs: Any) -> None:
    """user_logged_in: a log-in from a (user agent, /24 or /48) the user has not used for 90 days tells
    them. Their very first log-in tells nobody (every device is new then)."""
    membership = getattr(user, "membership", None) if user is not None else None
    if request is None or membership is None:
        return
    agent = str(request.META.get("HTTP_USER_AGENT", ""))[:500]
    ip = client_ip(request)
    agent_hash, network = hashlib.sha256(agent.encode()).hexdigest(), _network(ip)
    now = timezone.now()
    devices = KnownDevice.objects.filter(user=user)
    first = not devices.exists()
    recent = devices.filter(
        agent_hash=agent_hash, network=network, last_seen_at__gte=now - timedelta(days=DEVICE_MEMORY_DAYS)
    ).exists()
    KnownDevice.objects.update_or_create(
        user=user, agent_hash=agent_hash, network=network, defaults={"last_seen_at": now}
    )
    if first or recent:
        return
    context = {"agent": agent[:200], "network": network, "at": now.isoformat(timespec="seconds")}
    to = recipients(company_id=membership.company_id, kind=Kind.NEW_DEVICE, user_id=user.pk)
    key = f"{Kind.NEW_DEVICE}:{user.pk}:{agent_hash[:16]}:{network}:{now.isoformat()}"
    notifications_write(
        kind=Kind.NEW_DEVICE, company_id=membership.company_id, event_key=key, to=to, context=context
    )
