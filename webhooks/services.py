"""The webhook outbox: publish in the state change's transaction, deliver with leases, retry, redeliver.

Delivery never holds a database transaction across the HTTP call: a short transaction claims the event
(a lease), the POST runs outside any transaction, a second short transaction records the attempt. A
worker killed mid-delivery leaves an expired lease that the poller picks up again: a duplicate is
possible, a loss is not. Receivers dedupe on `webhook-id`.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import requests
from cryptography.fernet import InvalidToken
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, Subquery
from django.utils import timezone

from config.tasks import task
from payments import jsonutil
from payments.bulkinsert import bulk_insert
from payments.errors import InvalidState, NotFound
from payments.models import Company
from payments.services import company_previous_signing_secret, company_signing_secret
from webhooks.http import deadline, delivery_session
from webhooks.models import WebhookAttempt, WebhookEvent
from webhooks.signing import signed_headers

logger = logging.getLogger(__name__)

DELIVER_TASK = "webhooks.tasks.webhook_deliver"
EXCERPT_BYTES = 1024


def _user_agent() -> str:
    try:
        kassa_version = version("kassa")
    except PackageNotFoundError:
        kassa_version = "dev"
    return f"Kassa-Webhooks/{kassa_version}"


USER_AGENT = _user_agent()
UNDECRYPTABLE_ERROR = (
    "not sent: the signing secret cannot be decrypted (FIELD_ENCRYPTION_KEY differs from the key that "
    "encrypted it)"
)


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


def webhook_enqueue(written: Sequence[WebhookEvent]) -> None:
    """One delivery message per deliverable event of `written`, sent once the caller's transaction commits
    (at once in autocommit, where the statement that wrote them has committed already)."""
    webhook_deliver = task(DELIVER_TASK)
    for event in written:
        if event.status == WebhookEvent.Status.PENDING:
            webhook_deliver.delay_on_commit(str(event.pk))


def webhook_publish_changed(changed_sql: str, params: Sequence[Any], *, family: str) -> int:
    """PostgreSQL: `webhook_publish_many` for a set-based state change, in the statement that makes it.

    `changed_sql` is a data-modifying statement (an `UPDATE ... RETURNING`) whose rows are
    `(company_id, object_id, event_status, body)`: every changed row gets its event in the same statement,
    so the change and its outbox rows commit together without a round trip through Python objects. Returns
    how many events were written; deliverable ones are enqueued after commit, as `webhook_publish_many` does.
    """
    webhook_deliver = task(DELIVER_TASK)
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
    for event_id, status in rows:
        if status == pending:
            webhook_deliver.delay_on_commit(str(event_id))
    return len(rows)


# --- deliver ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PostResult:
    started_at: datetime
    duration_ms: int
    status_code: int | None
    excerpt: str
    error: str

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300 and not self.error


def _lease_free(now: datetime, token: UUID | None) -> Q:
    free = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now)
    if token is not None:
        free |= Q(lease_token=token)  # the poller claimed it for exactly this message
    return free


def _claim(event_id: UUID | str, token: UUID | None) -> UUID | None:
    """Take the delivery lease if the event is due and nobody holds it; the new lease token, else None."""
    now = timezone.now()
    new_token = uuid.uuid4()
    claimed = (
        WebhookEvent.objects.filter(pk=event_id, status=WebhookEvent.Status.PENDING, next_attempt_at__lte=now)
        .filter(_lease_free(now, token))
        .update(
            lease_token=new_token,
            lease_expires_at=now + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS),
        )
    )
    return new_token if claimed else None


def _event_to_send(event_id: UUID | str) -> tuple[WebhookEvent | None, bool]:
    """The event with its company, and whether it is held back: an earlier event of the same object is still
    on its first attempt. Events are sent in order (created before pending before processing), but only first
    attempts hold later events back, so a failing event never blocks the rest of its object for the length
    of its retry schedule. One query."""
    earlier = WebhookEvent.objects.filter(
        company_id=OuterRef("company_id"),
        family=OuterRef("family"),
        object_id=OuterRef("object_id"),
        status=WebhookEvent.Status.PENDING,
        attempt_count=0,
        created_at__lt=OuterRef("created_at"),
    )
    # No .first(): it would order by the model's -created_at, a sort for a primary-key lookup.
    found = (
        WebhookEvent.objects.select_related("company").annotate(held_back=Exists(earlier)).filter(pk=event_id)
    )
    event = next(iter(found.filter(pk=event_id).order_by()[:1]), None)
    return event, bool(event and event.held_back)  # type: ignore[attr-defined]


# A later event of an object waits for the earlier one's first attempt: 1, 2, 4 ... s, then every this
# many seconds. Backing off, so an earlier event whose message was lost (it waits for the poller) never
# makes the later ones spin.
ORDER_WAIT_MAX_SECONDS = 30


def webhook_deliver(
    *, event_id: UUID | str, lease_token: UUID | str | None = None, waited: int = 0
) -> WebhookAttempt | None:
    """One delivery attempt if the event is due; None when there was nothing to do (a duplicate message)
    or when it must wait for an earlier event of its object (then it is sent again, backing off)."""
    deliver_task = task(DELIVER_TASK)
    event, held_back = _event_to_send(event_id)
    if event is None:
        return None
    if held_back:
        countdown = min(2**waited, ORDER_WAIT_MAX_SECONDS)
        deliver_task.apply_async(
            (str(event_id), str(lease_token) if lease_token else None, min(waited + 1, 16)),
            countdown=countdown,
        )
        return None
    token = _claim(event.pk, UUID(str(lease_token)) if lease_token else None)
    if token is None:
        return None
    # Read before the claim; what the claim could have changed since (status, lease) is not used below.
    url = event.company.webhook_url
    if not url:
        _finish_without_url(event.pk, token)
        return None

    body = event.body.encode()
    # Signed now, with the company's current secret, so a rotated secret applies to retries as well.
    try:
        secret = company_signing_secret(event.company)
        previous = company_previous_signing_secret(event.company)
    except InvalidToken:
        # Nothing can be sent unsigned: a failed attempt, recorded and retried on the schedule like any other,
        # so the event never sits pending with no attempt while an operator has no idea why.
        logger.error("webhook %s: the signing secret cannot be decrypted with FIELD_ENCRYPTION_KEY", event.pk)
        failed = PostResult(timezone.now(), 0, None, "", UNDECRYPTABLE_ERROR)
        return _record(event.pk, token, url, {}, failed)
    headers = delivery_headers(secret, str(event.pk), body, previous=previous)
    result = webhook_post(url, body, headers)
    return _record(event.pk, token, url, headers, result)


def delivery_headers(
    secret: str, webhook_id: str, body: bytes, *, previous: str | None = None
) -> dict[str, str]:
    """Every header a webhook POST carries, signed at this moment (by both secrets during an overlap)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signed_headers(secret, webhook_id, int(time.time()), body, previous=previous),
    }


def webhook_post(url: str, body: bytes, headers: dict[str, str]) -> PostResult:
    """One POST through the guarded client: SSRF guard at connect, no proxies, no redirects, timeouts.
    Never raises: whatever went wrong is the result's `error`."""
    started_at = timezone.now()
    t0 = time.monotonic()
    total = settings.WEBHOOK_TOTAL_TIMEOUT_SECONDS
    status_code: int | None = None
    excerpt = error = ""
    cut = None
    if urlsplit(url).scheme != "https" and not settings.WEBHOOK_ALLOW_HTTP:
        # Saved while http was allowed, or written around the API: refused at send time too.
        return PostResult(started_at, 0, None, "", "not sent: plain http webhook URLs are refused here")
    try:
        with deadline(total) as cut:
            response = delivery_session().post(
                url,
                data=body,
                headers=headers,
                timeout=(settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS, total),
                allow_redirects=False,
                stream=True,
            )
            with response:
                status_code = response.status_code
                raw = response.raw.read(EXCERPT_BYTES, decode_content=True) or b""
                excerpt = raw.decode("utf-8", errors="replace")
                if not response.raw.read(1, decode_content=True):
                    # The whole answer was read: the connection may carry the next POST. A longer answer is
                    # never drained; closing the response drops its connection instead.
                    response.raw.release_conn()
        if cut.is_set() or time.monotonic() - t0 > total:
            error = f"deadline exceeded: no complete answer within {total} s"
        elif 300 <= status_code < 400:
            error = f"redirect to {response.headers.get('Location', '?')} not followed"
    except Exception as exc:
        if cut is not None and cut.is_set():
            error = f"deadline exceeded: no complete answer within {total} s"
        else:
            error = _post_error(exc, total)
    duration_ms = int((time.monotonic() - t0) * 1000)
    return PostResult(started_at, duration_ms, status_code, excerpt, error[:500])


def _post_error(exc: Exception, total: float) -> str:
    """Any failure is an attempt's error text (urllib3 read errors surface as their own types)."""
    if isinstance(exc, requests.Timeout):
        return f"timed out (connect {settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS} s, total {total} s)"
    return f"{exc.__class__.__name__}: {exc}"


def _retry_delay(attempt_count: int) -> float | None:
    """Seconds before the next attempt after `attempt_count` failures, with jitter; None when exhausted."""
    schedule = settings.WEBHOOK_RETRY_SCHEDULE_SECONDS
    if attempt_count > len(schedule):
        return None
    jitter = settings.WEBHOOK_RETRY_JITTER
    return schedule[attempt_count - 1] * random.uniform(1 - jitter, 1 + jitter)  # seconds, not money


@transaction.atomic
def _record(
    event_id: UUID, token: UUID, url: str, headers: dict[str, str], result: PostResult
) -> WebhookAttempt:
    webhook_deliver = task(DELIVER_TASK)
    last = WebhookAttempt.objects.filter(event=OuterRef("pk")).order_by("-number").values("number")[:1]
    event = WebhookEvent.objects.select_for_update().annotate(last_number=Subquery(last)).get(pk=event_id)
    number = (event.last_number or 0) + 1
    attempt = WebhookAttempt.objects.create(
        event=event,
        number=number,
        url=url,
        request_headers=headers,
        started_at=result.started_at,
        duration_ms=result.duration_ms,
        status_code=result.status_code,
        response_excerpt=result.excerpt,
        error=result.error,
        succeeded=result.succeeded,
    )
    if event.lease_token != token or event.status != WebhookEvent.Status.PENDING:
        return attempt  # our lease expired and another delivery owns the event now; it decides the status

    event.lease_token = None
    event.lease_expires_at = None
    if result.succeeded:
        event.status = WebhookEvent.Status.DELIVERED
        event.delivered_at = timezone.now()
        event.next_attempt_at = None
    else:
        event.attempt_count += 1
        delay = _retry_delay(event.attempt_count)
        if delay is None:
            event.status = WebhookEvent.Status.FAILED
            event.next_attempt_at = None
            logger.warning("webhook %s failed after %s attempts", event.pk, event.attempt_count)
        else:
            event.next_attempt_at = timezone.now() + timedelta(seconds=delay)
            # Short waits ride on a countdown message; long ones are found by the poller.
            if delay <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS:
                webhook_deliver.apply_async_on_commit((str(event.pk),), countdown=delay + 0.5)
    event.save(
        update_fields=[
            "lease_token",
            "lease_expires_at",
            "status",
            "delivered_at",
            "next_attempt_at",
            "attempt_count",
            "updated_at",
        ]
    )
    return attempt


@transaction.atomic
def _finish_without_url(event_id: UUID, token: UUID) -> None:
    WebhookEvent.objects.filter(pk=event_id, lease_token=token).update(
        status=WebhookEvent.Status.SKIPPED, next_attempt_at=None, lease_token=None, lease_expires_at=None
    )


# --- poll and redeliver -----------------------------------------------------------------------------------


def webhook_poll_due(*, limit: int | None = None) -> int:
    """Enqueue every due event whose message the broker lost (or never had). Returns how many."""
    webhook_deliver = task(DELIVER_TASK)
    now = timezone.now()
    # A fresh event's own message normally claims it within moments; the grace keeps the poller out of that.
    overdue = now - timedelta(seconds=settings.WEBHOOK_POLL_GRACE_SECONDS)
    token = uuid.uuid4()
    with transaction.atomic():
        ids = list(
            WebhookEvent.objects.select_for_update(skip_locked=True)
            .filter(status=WebhookEvent.Status.PENDING, next_attempt_at__lte=overdue)
            .filter(_lease_free(now, None))
            .order_by("next_attempt_at")
            .values_list("pk", flat=True)[: limit or settings.WEBHOOK_POLL_BATCH]
        )
        if ids:
            # Reserve them for the messages sent now, so the next poll does not enqueue them again.
            WebhookEvent.objects.filter(pk__in=ids).update(
                lease_token=token,
                lease_expires_at=now + timedelta(seconds=settings.WEBHOOK_ENQUEUE_LEASE_SECONDS),
            )
            for event_id in ids:
                webhook_deliver.delay_on_commit(str(event_id), str(token))
    return len(ids)


@transaction.atomic
def webhook_redeliver(*, company: Company, event_id: UUID | str) -> WebhookEvent:
    """Send an event again from the start of the retry schedule (same `webhook-id`)."""
    webhook_deliver = task(DELIVER_TASK)
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
    webhook_deliver.delay_on_commit(str(event.pk))
    return event
