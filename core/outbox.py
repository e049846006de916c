"""An outbox row sent by the workers under a lease: its columns (`OutboxRow`) and the steps every sender
takes (alerts.delivery, notifications.delivery).

A short statement claims a due, free row (`claim`); the send runs outside any transaction; a second short
statement records what came back (`record`) and, when it failed, backs off along the retry schedule
(`schedule_retry`) or gives up. Beat's poller (`poll`) sends again the due rows whose message was lost. The
callers keep their own clock, logger and log lines; nothing here reads a setting.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar
from uuid import UUID

from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from core.enqueue import TaskRef


class OutboxStatus(models.TextChoices):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"  # every attempt of the retry schedule failed, or the row can no longer be sent


class OutboxRow(models.Model):
    """The columns of a sent-under-a-lease row; each concrete model adds what it sends and its own Meta
    (the unique rule, the status check, the due index)."""

    Status = OutboxStatus

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    status = models.CharField(max_length=16, choices=OutboxStatus.choices, default=OutboxStatus.PENDING)
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True)
    lease_token = models.UUIDField(null=True)
    lease_expires_at = models.DateTimeField(null=True)
    last_error = models.CharField(max_length=500, blank=True)
    sent_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True


Row = TypeVar("Row", bound=OutboxRow)

# What recording an attempt writes.
RECORD_FIELDS = [
    "attempt_count",
    "lease_token",
    "lease_expires_at",
    "last_error",
    "status",
    "sent_at",
    "next_attempt_at",
]


def lease_free(now: datetime) -> Q:
    """No worker holds the row: never leased, or its lease ran out."""
    return Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now)


def poll(
    model: type[OutboxRow], task: TaskRef[[str]], *, now: datetime, grace_seconds: float, limit: int
) -> int:
    """A send message (`task`) for every pending, free row due for longer than `grace_seconds`, oldest due
    first, at most `limit`. Returns how many."""
    overdue = now - timedelta(seconds=grace_seconds)
    ids = list(
        model._default_manager.filter(status=OutboxStatus.PENDING, next_attempt_at__lte=overdue)
        .filter(lease_free(now))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in ids:
        task.publish_committed(str(pk))
    return len(ids)


def claim(model: type[OutboxRow], pk: UUID | str, *, now: datetime, lease_seconds: float) -> UUID | None:
    """The lease on the row if it is pending, due and free (its token); None: nothing to do."""
    token = uuid.uuid4()
    claimed = (
        model._default_manager.filter(pk=pk, status=OutboxStatus.PENDING, next_attempt_at__lte=now)
        .filter(lease_free(now))
        .update(lease_token=token, lease_expires_at=now + timedelta(seconds=lease_seconds))
    )
    return token if claimed else None


def record(
    model: type[Row],
    pk: Any,
    token: UUID,
    *,
    now: datetime,
    error: str,
    on_failure: Callable[[Row], None],
) -> Row | None:
    """In one short transaction: the attempt counted, the lease given back, SENT when `error` is empty,
    else `on_failure(row)` (which schedules the retry) with `last_error` set. None when the lease was lost
    (it ran out mid-send and another worker took the row: that one records its own attempt)."""
    with transaction.atomic():
        row = model._default_manager.select_for_update().filter(pk=pk, lease_token=token).first()
        if row is None:
            return None
        row.attempt_count += 1
        row.lease_token = row.lease_expires_at = None
        row.last_error = error[:500]
        if not error:
            row.status, row.sent_at, row.next_attempt_at = OutboxStatus.SENT, now, None
        else:
            on_failure(row)
        row.save(update_fields=RECORD_FIELDS)
    return row


def schedule_retry(
    row: OutboxRow,
    now: datetime,
    *,
    schedule: Sequence[int],
    task: TaskRef[[str]],
    countdown_max: float,
    permanent: bool = False,
) -> int | None:
    """After a failed attempt (`row.attempt_count` counts it): the wait of the schedule before the next
    one, with a countdown message when it is at most `countdown_max` (longer waits: the poller sends it when
    due). None, and the row FAILED, when the schedule is spent or the failure is `permanent`."""
    if permanent or row.attempt_count > len(schedule):
        row.status, row.next_attempt_at = OutboxStatus.FAILED, None
        return None
    wait = schedule[row.attempt_count - 1]
    row.next_attempt_at = now + timedelta(seconds=wait)
    if wait <= countdown_max:
        task.with_options(countdown=wait).delay_on_commit(str(row.pk))
    return wait
