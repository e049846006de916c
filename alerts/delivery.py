"""Sending alert notifications: claim one (a lease), send it outside any transaction, record the result.

A send never holds a transaction or a row lock across the SMTP or HTTP round trip: a short statement claims
the notification, the send runs, a second short statement records what came back and schedules a retry
(backing off) when it failed. A worker killed mid-send leaves a lease that expires, and the poller sends the
notification again: the receiver may see it twice (the same `webhook-id` and `eventId`), never not at all.
Each notification is one channel: a mail server that is down never holds back the webhook, nor the reverse.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import requests
from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from alerts.models import AlertNotification
from alerts.outbox import SEND_TASK
from webhooks.delivery import delivery_headers, webhook_post

logger = logging.getLogger("kassa.alerts")

Status = AlertNotification.Status
POLL_BATCH = 100


def _now() -> datetime:
    return timezone.now()


class _NotSent(Exception):
    """The channel is not (or no longer) configured to send this: recorded as failed at once, not retried."""


class _Refused(Exception):
    """The receiver did not take it (an HTTP status, a refused connection): retried; str() is the error."""


def alert_notification_send(*, notification_id: UUID | str) -> AlertNotification | None:
    """One attempt if the notification is due and free; None when there was nothing to do (a duplicate
    message, or another worker holds it)."""
    claimed = _claim(notification_id)
    if claimed is None:
        return None
    notification, token = claimed
    permanent = False
    try:
        _send(notification)
        error = ""
    except _NotSent as exc:
        error, permanent = str(exc), True
    except _Refused as exc:
        error = str(exc)
    except Exception as exc:  # SMTP, DNS, connection...: the attempt failed, it is retried
        error = f"{exc.__class__.__name__}: {exc}"
    return _record(notification, token, error=error, permanent=permanent)


def alert_notifications_poll(*, limit: int = POLL_BATCH) -> int:
    """Beat: a send message for every due notification whose message was lost (or whose retry wait was
    longer than a countdown message may wait). Returns how many. A duplicate message finds the notification
    claimed or sent, and does nothing."""
    now = _now()
    overdue = now - timedelta(seconds=settings.ALERT_POLL_GRACE_SECONDS)
    ids = list(
        AlertNotification.objects.filter(status=Status.PENDING, next_attempt_at__lte=overdue)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in ids:
        SEND_TASK.publish_committed(str(pk))
    return len(ids)


def _claim(notification_id: UUID | str) -> tuple[AlertNotification, UUID] | None:
    now, token = _now(), uuid.uuid4()
    claimed = (
        AlertNotification.objects.filter(pk=notification_id, status=Status.PENDING, next_attempt_at__lte=now)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now))
        .update(lease_token=token, lease_expires_at=now + timedelta(seconds=settings.ALERT_LEASE_SECONDS))
    )
    if not claimed:
        return None
    return AlertNotification.objects.select_related("alert").get(pk=notification_id), token


def _record(
    notification: AlertNotification, token: UUID, *, error: str, permanent: bool
) -> AlertNotification:
    now = _now()
    with transaction.atomic():
        row = (
            AlertNotification.objects.select_for_update()
            .filter(pk=notification.pk, lease_token=token)
            .first()
        )
        if row is None:
            # The lease ran out mid-send and another worker took the notification: it records its own attempt.
            logger.warning(
                "alert notification %s: lease lost before the result was recorded", notification.pk
            )
            return notification
        row.attempt_count += 1
        row.lease_token = row.lease_expires_at = None
        row.last_error = error[:500]
        if not error:
            row.status, row.sent_at, row.next_attempt_at = Status.SENT, now, None
        else:
            _schedule_retry(row, now, permanent=permanent)
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


def _schedule_retry(row: AlertNotification, now: datetime, *, permanent: bool) -> None:
    schedule = settings.ALERT_RETRY_SCHEDULE_SECONDS
    if permanent or row.attempt_count > len(schedule):
        row.status, row.next_attempt_at = Status.FAILED, None
        logger.error(
            "alert notification %s (%s of alert %s) failed for good after %s attempt(s): %s",
            row.pk,
            row.channel,
            row.alert_id,
            row.attempt_count,
            row.last_error,
        )
        return
    wait = schedule[row.attempt_count - 1]
    row.next_attempt_at = now + timedelta(seconds=wait)
    logger.warning(
        "alert notification %s (%s) attempt %s failed, next in %s s: %s",
        row.pk,
        row.channel,
        row.attempt_count,
        wait,
        row.last_error,
    )
    if wait <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS:  # longer waits: the poller sends it when due
        SEND_TASK.with_options(countdown=wait).delay_on_commit(str(row.pk))


def _send(notification: AlertNotification) -> None:
    body = json.loads(notification.body)
    if notification.channel == AlertNotification.Channel.EMAIL:
        _send_email(notification, body)
    else:
        _send_webhook(notification)


def _send_email(notification: AlertNotification, body: dict[str, Any]) -> None:
    recipients = list(settings.ALERT_EMAILS)
    if not recipients:
        raise _NotSent("not sent: ALERT_EMAILS is empty")
    what = "resolved" if notification.event == AlertNotification.Event.RESOLVED else "alert"
    subject = f"[Kassa {what}] {body['kind']} {body['key']}".replace("\r", " ").replace("\n", " ")[:200]
    lines = [
        body["message"],
        "",
        f"kind: {body['kind']}",
        f"key: {body['key']}",
        f"status: {body['status']}",
        f"raised: {body['raisedAt']} (counted {body['count']} time(s), last {body['lastRaisedAt']})",
    ]
    if body["resolvedAt"]:
        lines.append(f"resolved: {body['resolvedAt']} by {body['resolvedBy'] or 'the code (condition gone)'}")
    lines += [
        "",
        f"Status page: {settings.BASE_URL}{reverse('dashboard:alerts')}",
        f"Event id: {body['eventId']}",
    ]
    headers = {"X-Kassa-Alert-Id": str(body["id"]), "X-Kassa-Event-Id": str(notification.pk)}
    EmailMessage(subject, "\n".join(lines), to=recipients, headers=headers).send()


def _send_webhook(notification: AlertNotification) -> None:
    url, secret = settings.ALERT_WEBHOOK_URL, settings.ALERT_WEBHOOK_SECRET
    if not url:
        raise _NotSent("not sent: ALERT_WEBHOOK_URL is empty")
    if not secret.strip():
        raise _NotSent("not sent: ALERT_WEBHOOK_SECRET is empty (an operator webhook is always signed)")
    if urlsplit(url).scheme != "https" and not settings.WEBHOOK_ALLOW_HTTP:
        raise _NotSent("not sent: ALERT_WEBHOOK_URL must use https (plain http needs WEBHOOK_ALLOW_HTTP)")
    body = notification.body.encode()
    headers = delivery_headers(secret, str(notification.pk), body)  # signed now, as merchant webhooks are
    if settings.ALERT_WEBHOOK_ALLOW_PRIVATE_HOSTS:
        _post_trusted(url, body, headers)
        return
    result = webhook_post(url, body, headers)  # the SSRF guard at connect, no proxies, no redirects
    if not result.succeeded:
        raise _Refused(result.error or f"HTTP {result.status_code}")


def _post_trusted(url: str, body: bytes, headers: dict[str, str]) -> None:
    """A POST to the operator's own URL, which may be on a private address: no guard, still no proxies
    and no redirects."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise _NotSent("not sent: ALERT_WEBHOOK_URL must be an http(s) URL")
    with requests.Session() as session:
        session.trust_env = False
        timeout = (settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS, settings.WEBHOOK_TOTAL_TIMEOUT_SECONDS)
        response = session.post(url, data=body, headers=headers, timeout=timeout, allow_redirects=False)
    if not 200 <= response.status_code < 300:
        raise _Refused(f"HTTP {response.status_code}")
