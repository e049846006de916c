"""Sending notifications: claim one (a lease), render and send it outside any transaction, record the result.

As alerts.delivery does: a short statement claims the row, the SMTP round trip runs with no lock held, a
second short statement records what came back and schedules a retry (backing off) when it failed. A row is
sent at most once by the workers (the claim needs it pending and free); a worker killed between the SMTP
answer and the record leaves a lease that expires, and only then may the mail go again.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone, translation

from notifications.events import SEND_TASK
from notifications.models import Notification

logger = logging.getLogger("kassa.notifications")

Status = Notification.Status
POLL_BATCH = 100
POLL_GRACE_SECONDS = 15  # a send message normally comes sooner: only older due rows are re-sent


def _now() -> datetime:
    return timezone.now()


def notification_send(*, notification_id: UUID | str) -> Notification | None:
    """One attempt if the notification is due and free; None when there was nothing to do (sent already, a
    duplicate message, another worker holds it)."""
    claimed = _claim(notification_id)
    if claimed is None:
        return None
    notification, token = claimed
    try:
        notification_message(notification).send()
        error = ""
    except Exception as exc:  # SMTP, DNS, a refused connection...: the attempt failed, it is retried
        error = f"{exc.__class__.__name__}: {exc}"
    return _record(notification, token, error=error)


def notifications_poll(*, limit: int = POLL_BATCH) -> int:
    """Beat: a send message for every due notification whose message was lost (or whose retry wait was
    longer than a countdown message may wait). Returns how many."""
    now = _now()
    overdue = now - timedelta(seconds=POLL_GRACE_SECONDS)
    ids = list(
        Notification.objects.filter(status=Status.PENDING, next_attempt_at__lte=overdue)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in ids:
        SEND_TASK.publish_committed(str(pk))
    return len(ids)


def notification_message(notification: Notification) -> EmailMultiAlternatives:
    """The e-mail of a row, in its language: plain text with an HTML alternative."""
    template = f"notifications/email/{notification.kind}"
    context = {**notification.context, "site": settings.BASE_URL}
    with translation.override(notification.language):
        subject_text = render_to_string(f"{template}_subject.txt", context)
        text = render_to_string(f"{template}.txt", context)
        html = render_to_string(f"{template}.html", context)
    subject = " ".join(subject_text.split())[:200]  # one line: no header injection from a name
    headers = {"X-Kassa-Notification-Id": str(notification.pk), "Content-Language": notification.language}
    message = EmailMultiAlternatives(subject, text, to=[notification.recipient], headers=headers)
    message.attach_alternative(html, "text/html")
    return message


def _claim(notification_id: UUID | str) -> tuple[Notification, UUID] | None:
    now, token = _now(), uuid.uuid4()
    claimed = (
        Notification.objects.filter(pk=notification_id, status=Status.PENDING, next_attempt_at__lte=now)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now))
        .update(
            lease_token=token, lease_expires_at=now + timedelta(seconds=settings.NOTIFICATION_LEASE_SECONDS)
        )
    )
    if not claimed:
        return None
    return Notification.objects.get(pk=notification_id), token


def _record(notification: Notification, token: UUID, *, error: str) -> Notification:
    now = _now()
    with transaction.atomic():
        row = Notification.objects.select_for_update().filter(pk=notification.pk, lease_token=token).first()
        if row is None:
            logger.warning("notification %s: lease lost before the result was recorded", notification.pk)
            return notification
        row.attempt_count += 1
        row.lease_token = row.lease_expires_at = None
        row.last_error = error[:500]
        if not error:
            row.status, row.sent_at, row.next_attempt_at = Status.SENT, now, None
        else:
            _schedule_retry(row, now)
        row.save(
            update_fields=[
                "attempt_count",
                "lease_token",
                "lease_expires_at",
                "last_error",
                "status",
                "sent_at",
                "next_attempt_at",
            ]
        )
    return row


def _schedule_retry(row: Notification, now: datetime) -> None:
    schedule = settings.NOTIFICATION_RETRY_SCHEDULE_SECONDS
    if row.attempt_count > len(schedule):
        row.status, row.next_attempt_at = Status.FAILED, None
        logger.error(
            "notification %s (%s) failed for good after %s attempt(s): %s",
            row.pk,
            row.kind,
            row.attempt_count,
            row.last_error,
        )
        return
    wait = schedule[row.attempt_count - 1]
    row.next_attempt_at = now + timedelta(seconds=wait)
    logger.warning(
        "notification %s (%s) attempt %s failed, next in %s s: %s",
        row.pk,
        row.kind,
        row.attempt_count,
        wait,
        row.last_error,
    )
    if wait <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS:  # longer waits: the poller sends it when due
        SEND_TASK.with_options(countdown=wait).delay_on_commit(str(row.pk))
