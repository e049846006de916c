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
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import requests
from django.conf import settings
from django.core.mail import EmailMessage
from django.urls import reverse
from django.utils import timezone

from alerts.models import AlertNotification
from alerts.outbox import SEND_TASK
from core import outbox
from webhooks.delivery import delivery_headers, webhook_post

logger = logging.getLogger("kassa.alerts")

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
    grace = settings.ALERT_POLL_GRACE_SECONDS
    return outbox.poll(AlertNotification, SEND_TASK, now=_now(), grace_seconds=grace, limit=limit)


def _claim(notification_id: UUID | str) -> tuple[AlertNotification, UUID] | None:
    lease = settings.ALERT_LEASE_SECONDS
    token = outbox.claim(AlertNotification, notification_id, now=_now(), lease_seconds=lease)
    if token is None:
        return None
    return AlertNotification.objects.select_related("alert").get(pk=notification_id), token


def _record(
    notification: AlertNotification, token: UUID, *, error: str, permanent: bool
) -> AlertNotification:
    now = _now()

    def retry(row: AlertNotification) -> None:
        _schedule_retry(row, now, permanent=permanent)

    row = outbox.record(AlertNotification, notification.pk, token, now=now, error=error, on_failure=retry)
    if row is None:
        logger.warning("alert notification %s: lease lost before the result was recorded", notification.pk)
        return notification
    return row


def _schedule_retry(row: AlertNotification, now: datetime, *, permanent: bool) -> None:
    wait = outbox.schedule_retry(
        row,
        now,
        schedule=settings.ALERT_RETRY_SCHEDULE_SECONDS,
        task=SEND_TASK,
        countdown_max=settings.WEBHOOK_COUNTDOWN_MAX_SECONDS,
        permanent=permanent,
    )
    if wait is None:
        logger.error(
            "alert notification %s (%s of alert %s) failed for good after %s attempt(s): %s",
            row.pk,
            row.channel,
            row.alert_id,
            row.attempt_count,
            row.last_error,
        )
    else:
        logger.warning(
            "alert notification %s (%s) attempt %s failed, next in %s s: %s",
            row.pk,
            row.channel,
            row.attempt_count,
            wait,
            row.last_error,
        )


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
