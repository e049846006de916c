"""Sending notifications: claim one (a lease), render and send it outside any transaction, record the result.

As alerts.delivery does: a short statement claims the row, the SMTP round trip runs with no lock held, a
second short statement records what came back and schedules a retry (backing off) when it failed. A row is
sent at most once by the workers (the claim needs it pending and free); a worker killed between the SMTP
answer and the record leaves a lease that expires, and only then may the mail go again.
"""

from __future__ import annotations

import logging
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import timezone, translation

from core import outbox
from notifications.events import SEND_TASK
from notifications.models import Notification

logger = logging.getLogger("kassa.notifications")

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
    return outbox.poll(Notification, SEND_TASK, now=_now(), grace_seconds=POLL_GRACE_SECONDS, limit=limit)


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
    lease = settings.NOTIFICATION_LEASE_SECONDS
    token = outbox.claim(Notification, notification_id, now=_now(), lease_seconds=lease)
    if token is None:
        return None
    return Notification.objects.get(pk=notification_id), token


def _record(notification: Notification, token: UUID, *, error: str) -> Notification:
    now = _now()

    def retry(row: Notification) -> None:
        _schedule_retry(row, now)

    row = outbox.record(Notification, notification.pk, token, now=now, error=error, on_failure=retry)
    if row is None:
        logger.warning("notification %s: lease lost before the result was recorded", notification.pk)
        return notification
    return row


def _schedule_retry(row: Notification, now: datetime) -> None:
    wait = outbox.schedule_retry(
        row,
        now,
        schedule=settings.NOTIFICATION_RETRY_SCHEDULE_SECONDS,
        task=SEND_TASK,
        countdown_max=settings.WEBHOOK_COUNTDOWN_MAX_SECONDS,
    )
    if wait is None:
        logger.error(
            "notification %s (%s) failed for good after %s attempt(s): %s",
            row.pk,
            row.kind,
            row.attempt_count,
            row.last_error,
        )
    else:
        logger.warning(
            "notification %s (%s) attempt %s failed, next in %s s: %s",
            row.pk,
            row.kind,
            row.attempt_count,
            wait,
            row.last_error,
        )
