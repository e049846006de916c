"""The alert channels' outbox: a notification row per configured channel, written in the transaction that
opens (or resolves) the alert, and a send message per row once that transaction commits.

A message the broker loses is found again by the poller of beat (alerts.delivery), so a committed
notification is always sent or recorded as failed; a rolled-back raise tells nobody.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from alerts.models import Alert, AlertNotification
from core.enqueue import TaskRef

SEND_TASK = TaskRef[[str]]("alerts.tasks.alert_notification_send")


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def alert_fields(alert: Alert) -> dict[str, Any]:
    """The alert as it stands now, as the operator webhook and `manage.py alerts list --json` show it."""
    return {
        "kind": alert.kind,
        "key": alert.key,
        "message": alert.message,
        "status": alert.status,
        "count": alert.count,
        "raisedAt": _iso(alert.raised_at),
        "lastRaisedAt": _iso(alert.last_raised_at),
        "acknowledgedAt": _iso(alert.acknowledged_at),
        "acknowledgedBy": alert.acknowledged_by or None,
        "resolvedAt": _iso(alert.resolved_at),
        "resolvedBy": alert.resolved_by or None,
    }


def alert_body(alert: Alert, *, event: str, event_id: str) -> dict[str, Any]:
    """What the operator webhook receives (docs/operations.md#alerts): the alert as it stands at the event."""
    return {"id": alert.pk, "eventId": event_id, "event": f"alert.{event}", **alert_fields(alert)}


def configured_channels() -> list[str]:
    channels: list[str] = []
    if settings.ALERT_EMAILS:
        channels.append(AlertNotification.Channel.EMAIL)
    if settings.ALERT_WEBHOOK_URL:
        channels.append(AlertNotification.Channel.WEBHOOK)
    return channels


def notifications_write(alert: Alert, event: str) -> list[AlertNotification]:
    """In the caller's transaction: one notification per configured channel for this `event` of the alert
    (the database refuses a second one), sent after commit."""
    if event == AlertNotification.Event.RESOLVED and not settings.ALERT_NOTIFY_RESOLVED:
        return []
    now = timezone.now()
    written = []
    for channel in configured_channels():
        event_id = uuid.uuid4()
        body = json.dumps(alert_body(alert, event=event, event_id=str(event_id)), separators=(",", ":"))
        written.append(
            AlertNotification.objects.create(
                id=event_id, alert=alert, event=event, channel=channel, body=body, next_attempt_at=now
            )
        )
    for notification in written:
        SEND_TASK.delay_on_commit(str(notification.pk))
    return written
