"""The webhook outbox: publish in the state change's transaction, dispatch, poll, redeliver.

An event is written in the transaction of the state change it reports. After commit, a wake-up message
(core.wakeup: one waiting message for any number of commits) runs the dispatcher, which reserves the new
events and sends one delivery message each (webhooks.delivery). The poller of beat sends what no message
took: events whose message was lost, and retries whose wait was too long for a countdown message.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from core import jsonutil
from core.bulkinsert import bulk_insert
from core.enqueue import TaskRef
from core.errors import InvalidState, NotFound
from core.wakeup import Wake, wake_on_commit, wakes_on_commit
from payments.models import Company
from webhooks.delivery import DELIVER_TASK
from webhooks.models import WebhookEvent

logger = logging.getLogger(__name__)

DISPATCH_TASK = TaskRef[[]]("webhooks.tasks.webhook_dispatch")


# --- publish ----------------------------------------------------------------------------------------------


def webhook_publish(*, company: Company, family: str, object_id: str, body: dict[str, Any]) -> WebhookEvent:
    """Write the event in the caller's transaction; delivery is enqueued only if that transaction commits."""
    return webhook_publish_many([(company, family, object_id, body)])[0]


def webhook_publish_many(events: Sequence[tuple[Company, str, str, dict[str, Any]]]) -> list[WebhookEvent]:
    """`webhook_publish` for many events at once (company, family, object_id, body): one INSERT, one message
    per deliverable event after commit. For set-based transitions such as the expiry sweep."""
    created = bulk_insert(webhook_event_rows(events))
    webhook_enqueue(created)
    return created


def webhook_event_rows(events: Sequence[tuple[Company, str, str, dict[str, Any]]]) -> list[WebhookEvent]:
    """The outbox rows of `webhook_publish_many`, not yet written: for a caller that writes them in the same
    statement as its own rows (`insert_together`), then calls `webhook_enqueue` with them."""
    now = timezone.now()
    return [
        WebhookEvent(
            company=company,
            family=family,
            object_id=object_id,
            event_status=str(body.get("status", "")),
            body=jsonutil.dumps(body),
            status=WebhookEvent.Status.PENDING if company.webhook_url else WebhookEvent.Status.SKIPPED,
            next_attempt_at=now if company.webhook_url else None,
        )
        for company, family, object_id, body in events
    ]


def webhook_enqueue(written: Sequence[WebhookEvent], *, also: Sequence[Wake] = ()) -> None:
    """Wake the dispatcher once the caller's transaction commits (at once in autocommit, where the statement
    that wrote them has committed already), if any event of `written` is to be delivered; and the tasks of
    `also` (core.wakeup), in the same cache round trip."""
    pending = any(event.status == WebhookEvent.Status.PENDING for event in written)
    wakes_on_commit(*([(DISPATCH_TASK,)] if pending else []), *also)


def webhook_publish_changed(changed_sql: str, params: Sequence[Any], *, family: str) -> int:
    """PostgreSQL: `webhook_publish_many` for a set-based state change, in the statement that makes it.

    `changed_sql` is a data-modifying statement (an `UPDATE ... RETURNING`) whose rows are
    `(company_id, object_id, event_status, body)`: every changed row gets its event in the same statement,
    so the change and its outbox rows commit together without a round trip through Python objects. Returns
    how many events were written; the dispatcher is woken after commit, as `webhook_publish_many` does.
    """
    now = timezone.now()
    pending, skipped = WebhookEvent.Status.PENDING, WebhookEvent.Status.SKIPPED
    sql = f"""
        WITH changed AS ({changed_sql}),
        published AS (
            INSERT INTO {WebhookEvent._meta.db_table} (id, company_id, family, object_id, event_status, body,
                status, attempt_count, next_attempt_at, created_at, updated_at)
            SELECT gen_random_uuid(), changed.company_id, %s, changed.object_id, changed.event_status,
                changed.body, CASE WHEN company.webhook_url <> '' THEN %s ELSE %s END, 0,
                CASE WHEN company.webhook_url <> '' THEN %s::timestamptz END, %s, %s
            FROM changed JOIN {Company._meta.db_table} AS company ON company.id = changed.company_id
            RETURNING id, status
        )
        SELECT id, status FROM published
    """  # noqa: S608 - table names from the models; every value is a parameter
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, family, pending, skipped, now, now, now])
        rows = cursor.fetchall()
    if any(status == pending for _, status in rows):
        wake_on_commit(DISPATCH_TASK)
    return len(rows)


def _lease_free(now: datetime, token: UUID | None) -> Q:
    free = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now)
    if token is not None:
        free |= Q(lease_token=token)  # the poller claimed it for exactly this message
    return free


# --- dispatch, poll and redeliver ----------------------------------------------------------------------


# Batches per dispatcher run: under a flood that never lets a batch come up short, the run ends here and
# wakes the next one, which queues behind the delivery messages just sent instead of holding a worker slot.
DISPATCH_MAX_BATCHES = 50


def webhook_dispatch() -> int:
    """The dispatcher's run: a delivery message for every event published since it last ran (due, never
    attempted, not reserved), in batches until none is left. Returns how many."""
    total = 0
    for _ in range(DISPATCH_MAX_BATCHES):
        sent = _send_due(before=timezone.now(), first_attempts=True, limit=settings.WEBHOOK_POLL_BATCH)
        total += sent
        if sent < settings.WEBHOOK_POLL_BATCH:
            return total
    wake_on_commit(DISPATCH_TASK)  # more may be left: the next run takes them
    return total


def webhook_poll_due(*, limit: int | None = None) -> int:
    """Enqueue every due event whose message the broker lost (or never had). Returns how many."""
    # A fresh event's dispatch normally reserves it within moments; the grace keeps the poller out of that.
    overdue = timezone.now() - timedelta(seconds=settings.WEBHOOK_POLL_GRACE_SECONDS)
    return _send_due(before=overdue, first_attempts=False, limit=limit or settings.WEBHOOK_POLL_BATCH)


def _send_due(*, before: datetime, first_attempts: bool, limit: int) -> int:
    """Reserve up to `limit` pending events due before `before` whose lease is free, for the delivery
    messages sent after commit; the reservation (an enqueue lease) keeps every other dispatch and poll off
    them until it expires, when a lost message's event is taken again."""
    now, token = timezone.now(), uuid.uuid4()
    due = WebhookEvent.objects.filter(status=WebhookEvent.Status.PENDING, next_attempt_at__lte=before)
    if first_attempts:
        # Retries ride on their own countdown messages, or wait for the poller.
        due = due.filter(attempt_count=0)
    with transaction.atomic():
        ids = list(
            due.select_for_update(skip_locked=True)
            .filter(_lease_free(now, None))
            .order_by("next_attempt_at")
            .values_list("pk", flat=True)[:limit]
        )
        if ids:
            WebhookEvent.objects.filter(pk__in=ids).update(
                lease_token=token,
                lease_expires_at=now + timedelta(seconds=settings.WEBHOOK_ENQUEUE_LEASE_SECONDS),
            )
            transaction.on_commit(functools.partial(_send, ids, token))
    return len(ids)


def _send(ids: Sequence[UUID], token: UUID) -> None:
    """One delivery message per reserved event, through one producer. A failed publish is logged: the
    reservation expires and the poller sends the events again."""
    try:
        with DELIVER_TASK.task.app.producer_or_acquire() as producer:
            sending = DELIVER_TASK.with_options(producer=producer)
            for event_id in ids:
                sending.delay(str(event_id), str(token))
    except Exception as exc:  # the broker: connection refused, timeout, DNS...
        logger.warning(
            "delivery messages of %s events not sent (%s: %s); the poller sends them once their reservation "
            "expires",
            len(ids),
            type(exc).__name__,
            exc,
        )


@transaction.atomic
def webhook_redeliver(*, company: Company, event_id: UUID | str) -> WebhookEvent:
    """Send an event again from the start of the retry schedule (same `webhook-id`)."""
    event = WebhookEvent.objects.select_for_update().filter(company=company, pk=event_id).first()
    if event is None:
        raise NotFound("No such webhook event.")
    company.refresh_from_db(fields=["webhook_url"])
    if not company.webhook_url:
        raise InvalidState("Set a webhook URL before redelivering events.")
    now = timezone.now()
    if (
        event.status == WebhookEvent.Status.PENDING
        and event.lease_expires_at
        and event.lease_expires_at > now
    ):
        raise InvalidState("This event is being delivered right now.")
    event.status = WebhookEvent.Status.PENDING
    event.attempt_count = 0
    event.next_attempt_at = now
    event.lease_token = None
    event.lease_expires_at = None
    event.save(
        update_fields=[
            "status",
            "attempt_count",
            "next_attempt_at",
            "lease_token",
            "lease_expires_at",
            "updated_at",
        ]
    )
    wake_on_commit(DISPATCH_TASK)
    return event
