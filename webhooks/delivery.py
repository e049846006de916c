"""Webhook delivery: claim an event (a lease), POST it signed, record the attempt and schedule the next.

Delivery never holds a database transaction across the HTTP call: a short statement claims the event (a
lease), the POST runs outside any transaction, a second short statement records the attempt. A worker killed
mid-delivery leaves an expired lease that the poller (webhooks.services) picks up again: a duplicate is
possible, a loss is not. Receivers dedupe on `webhook-id`.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import requests
from cryptography.fernet import InvalidToken
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core import metrics
from core.enqueue import TaskRef
from core.rawread import ModelColumns
from core.request_id import log_objects
from payments.models import Company
from payments.services import company_previous_signing_secret, company_signing_secret
from webhooks.http import deadline, delivery_session
from webhooks.models import WebhookAttempt, WebhookEvent
from webhooks.signing import signed_headers

logger = logging.getLogger(__name__)


def _deliver(event_id: str, lease_token: str | None = None, waited: int = 0) -> None:
    """The message of webhooks.tasks.webhook_deliver: its parameters, which the start-up check holds it to."""


DELIVER_TASK = TaskRef.shaped("webhooks.tasks.webhook_deliver", _deliver)
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


# but `_RECORD_SQL`.
_EVENT, _ATTEMPT, _COMPANY = (model._meta.db_table for model in (WebhookEvent, WebhookAttempt, Company))
# Claimable by a message: pending, due, the lease free or held by the poller for this very message.
_CLAIMABLE = """status = %s AND next_attempt_at <= %s
    AND (lease_expires_at IS NULL OR lease_expires_at <= %s OR lease_token = %s)"""


# Held back: an earlier event of its object still waits for its first attempt. Events of an object go out in
# order, but only first attempts hold later ones back: a failing one never blocks them for its retry schedule.
def _held_back(of: str, *, but: str = "") -> str:
    """The condition, for the event `of` (a table or alias); `but`, an event that no longer counts (its
    attempt is being recorded by the same statement, which still sees it as it was)."""
    besides = f" AND earlier.id <> {but}" if but else ""
    return f"""EXISTS (SELECT 1 FROM {_EVENT} AS earlier WHERE earlier.company_id = {of}.company_id
    AND earlier.family = {of}.family AND earlier.object_id = {of}.object_id AND earlier.status = %s
    AND earlier.attempt_count = 0 AND earlier.created_at < {of}.created_at{besides})"""  # noqa: S608


_HELD_BACK = _held_back(_EVENT)
# The claim, atomic by itself: the lease of a claimable event not held back, and what the delivery needs, with
# the URL and signing-secret columns of its company by subqueries (SQLite's RETURNING names no other table).
# What the delivery reads of the company: its URL and what payments.services' signing-secret helpers read.
_SECRETS = ("signing_secret_encrypted", "previous_signing_secret_encrypted", "previous_signing_secret_until")
_OF = ModelColumns(Company, _COMPANY, ("id", "webhook_url", *_SECRETS))
_OF_COMPANY = [f"(SELECT {c} FROM {_COMPANY} WHERE id = {_EVENT}.company_id)" for c in _OF.columns[1:]]  # noqa: S608


def _claim_sql(relaxed: str = "") -> str:
    """The claim; `relaxed`, a condition (ending in AND) that holds and tunes the claim's transaction."""
    return f"""UPDATE {_EVENT} SET lease_token = %s, lease_expires_at = %s
    WHERE id = %s AND {relaxed}{_CLAIMABLE} AND NOT {_HELD_BACK}
    RETURNING body, attempt_count, company_id, {", ".join(_OF_COMPANY)}"""  # noqa: S608


_CLAIM_SQL = _claim_sql()
# PostgreSQL: the claim's commit does not wait for its WAL to reach the disk (about 0.14 ms of a delivery's
# 3.5 here). A claim lost in a crash before the attempt's record commits (which flushes the WAL up to itself,
# the claim's commit included) leaves the event pending with no lease: it is delivered again, as it is when a
# worker dies holding a durable lease. Only the claimed row's transaction is relaxed (set_config's is_local).
_CLAIM_SQL_POSTGRES = _claim_sql("set_config('synchronous_commit', 'off', true) = 'off' AND ")
# When the claim took nothing (the rare path), the message is sent again, backing off, while the event is held
# back, or if it has become claimable since (the earlier event's first attempt was recorded in between). The
# backoff is only the fallback: the attempt that ends the wait releases the next event at once (`_NEXT_SQL`).
_RESEND_SQL = f"SELECT 1 FROM {_EVENT} WHERE id = %s AND ({_HELD_BACK} OR {_CLAIMABLE})"  # noqa: S608
# Once the first attempt of an event is recorded (or the event skipped), the next event of its object that it
# held back, if nothing else holds it: its id and the lease token of the message that reserved it (the claim
# accepts that token), so a message sent at once claims it instead of waiting for its own backoff. `ended`
# is read as the statement found it: on PostgreSQL the record's statement, before its own update.
_NEXT_SQL = f"""SELECT later.id, later.lease_token FROM {_EVENT} AS ended JOIN {_EVENT} AS later
    ON later.company_id = ended.company_id AND later.family = ended.family
    AND later.object_id = ended.object_id
    WHERE ended.id = %s AND ended.attempt_count = 0 AND later.created_at > ended.created_at
    AND later.status = %s AND later.attempt_count = 0 AND NOT {_held_back("later", but="ended.id")}
    ORDER BY later.created_at LIMIT 1"""  # noqa: S608


def _claim(event_id: UUID | str, token: UUID | None) -> WebhookEvent | None:
    """Take the delivery lease (`_CLAIM_SQL`): the event as the claim read it, unsaved, with our lease token,
    body, attempt_count and company (URL and secrets only); None when nothing was claimed."""
    now, new_token, event_id = timezone.now(), uuid.uuid4(), UUID(str(event_id))
    expires, pending = now + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS), WebhookEvent.Status.PENDING
    claim = _CLAIM_SQL_POSTGRES if connection.vendor == "postgresql" else _CLAIM_SQL
    rows = _execute(claim, [new_token, expires, event_id, pending, now, now, token, pending])
    if not rows:
        return None
    body, count, *company = rows[0]  # the company's columns: its id first (the event's company_id)
    return WebhookEvent(
        id=event_id, lease_token=new_token, body=body, attempt_count=count, company=_OF.build(company)
    )


def _execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Every row of one statement, values written as the ORM writes them (SQLite: UUIDs as hex, datetimes as
    text). All rows are read: SQLite finishes an UPDATE ... RETURNING only then."""
    with connection.cursor() as cursor:
        cursor.execute(sql, [_written(value) for value in params])
        return cursor.fetchall()


def _written(value: Any) -> Any:
    if isinstance(value, UUID) and not connection.features.has_native_uuid_field:
        return value.hex
    return connection.ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value


# A later event of an object waits for the earlier one's first attempt, which releases it when it ends
# (`_release_next`). Its own message only backs off meanwhile, 1, 2, 4 ... s, then every this many seconds:
# the fallback for a release that never came (its message lost, or a race with the earlier event's record),
# so an earlier event whose message was lost (it waits for the poller) never makes it spin.
ORDER_WAIT_MAX_SECONDS = 30


def webhook_deliver(
    *, event_id: UUID | str, lease_token: UUID | str | None = None, waited: int = 0
) -> WebhookAttempt | None:
    """One delivery attempt if the event is due; None when there was nothing to do (a duplicate message)
    or when it must wait for an earlier event of its object (then it is sent again, backing off)."""
    token = UUID(str(lease_token)) if lease_token else None
    if (event := _claim(event_id, token)) is None:
        now, pending = timezone.now(), WebhookEvent.Status.PENDING
        if _execute(_RESEND_SQL, [UUID(str(event_id)), pending, pending, now, now, token]):
            DELIVER_TASK.with_options(countdown=min(2**waited, ORDER_WAIT_MAX_SECONDS)).delay(
                str(event_id), str(lease_token) if lease_token else None, min(waited + 1, 16)
            )
        return None
    log_objects(webhook_event_id=event.pk, merchant_id=event.company_id)
    url = event.company.webhook_url
    if not url:
        _finish_without_url(event.pk, event.lease_token)
        metrics.webhook_attempt("skipped")
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
        return _record(event, url, {}, failed)
    headers = delivery_headers(secret, str(event.pk), body, previous=previous)
    return _record(event, url, headers, webhook_post(url, body, headers))


def _release(next_id: Any, token: Any) -> None:
    """A message, after the caller's commit, for the event `_NEXT_SQL` found (its id and lease token; None
    when there is none): its wait for the earlier event is over."""
    if next_id is None:
        return
    lease = str(UUID(str(token))) if token else None
    DELIVER_TASK.delay_on_commit(
        str(UUID(str(next_id))),
        lease,  # SQLite reads UUIDs as hex
    )


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


# Recording an attempt. Its number is the event's `attempts_recorded`, bumped by the UPDATE, which works on
# the newest row version once it holds the row lock (READ COMMITTED): two deliveries of an event recording at
# once (one whose lease expired) take consecutive numbers, where max(number) + 1 alone could read a snapshot
# from before the other's commit. Only attempts numbered past it (by the previous version) move it further.
_NUMBER = f"""1 + COALESCE((SELECT MAX(number) FROM {_ATTEMPT} WHERE event_id = {_EVENT}.id
    AND number > {_EVENT}.attempts_recorded), {_EVENT}.attempts_recorded)"""  # noqa: S608
# Our lease still holds: the outcome sets the status and the schedule, and the lease is released.
_OURS_SQL = f"""UPDATE {_EVENT} SET attempts_recorded = {_NUMBER}, status = %s, attempt_count = %s,
    next_attempt_at = %s, delivered_at = COALESCE(%s, delivered_at), lease_token = NULL,
    lease_expires_at = NULL, updated_at = %s
    WHERE id = %s AND lease_token = %s AND status = %s RETURNING attempts_recorded, TRUE"""  # noqa: S608
# Our lease expired and another delivery owns the event now: it decides the status, we only take a number.
_THEIRS_SQL = f"UPDATE {_EVENT} SET attempts_recorded = {_NUMBER} WHERE id = %s"  # noqa: S608
_ATTEMPT_FIELDS = [f for f in WebhookAttempt._meta.fields if f.name not in ("id", "number")]
_INSERT_SQL = f"INSERT INTO {_ATTEMPT} (number, {', '.join(str(f.column) for f in _ATTEMPT_FIELDS)})"
_VALUES = ", ".join(["%s"] * len(_ATTEMPT_FIELDS))
# PostgreSQL: both UPDATEs and the INSERT in one statement, atomic by itself; `theirs` runs if `ours` did not.
# The same statement finds the next event of the object to release (`_NEXT_SQL`), when the attempt is ours.
_RECORD_SQL = f"""WITH ours (number, mine) AS ({_OURS_SQL}),
    theirs AS ({_THEIRS_SQL} AND NOT EXISTS (SELECT 1 FROM ours) RETURNING attempts_recorded, FALSE),
    numbered (number, mine) AS (SELECT * FROM ours UNION ALL SELECT * FROM theirs),
    attempt AS ({_INSERT_SQL} SELECT number, {_VALUES} FROM numbered RETURNING id)
    SELECT attempt.id, number, mine, released.id, released.lease_token FROM attempt, numbered
    LEFT JOIN LATERAL ({_NEXT_SQL}) AS released ON numbered.mine"""  # noqa: S608


def _record(event: WebhookEvent, url: str, headers: dict[str, str], result: PostResult) -> WebhookAttempt:
    """Record the attempt (`_RECORD_SQL`); the outcome is decided from the attempt count the claim read."""
    now, pending, count, delay = timezone.now(), WebhookEvent.Status.PENDING, event.attempt_count, None
    status, next_at = WebhookEvent.Status.DELIVERED, None
    if not result.succeeded:
        count, delay = count + 1, _retry_delay(count + 1)
        status = pending if delay is not None else WebhookEvent.Status.FAILED
        next_at = now + timedelta(seconds=delay) if delay is not None else None
    delivered = now if result.succeeded else None  # NULL: delivered_at stays as it is
    ours = [status, count, next_at, delivered, now, event.pk, event.lease_token, pending]
    outcome = {**asdict(result), "succeeded": result.succeeded}
    outcome["response_excerpt"] = outcome.pop("excerpt")
    attempt = WebhookAttempt(event_id=event.pk, url=url, request_headers=headers, **outcome)
    values = [f.get_db_prep_save(getattr(attempt, f.attname), connection) for f in _ATTEMPT_FIELDS]
    following = [event.pk, pending, pending]  # `_NEXT_SQL`'s
    if connection.vendor == "postgresql":
        rows = _execute(_RECORD_SQL, [*ours, event.pk, *values, *following])
    else:  # SQLite has no data-modifying WITH: the same statements, one by one in a transaction
        with transaction.atomic():
            # Before the update, as PostgreSQL's statement reads it.
            released = next(iter(_execute(_NEXT_SQL, following)), (None, None))
            theirs = f"{_THEIRS_SQL} RETURNING attempts_recorded, FALSE"
            numbered = _execute(_OURS_SQL, ours) or _execute(theirs, [event.pk])
            insert = f"{_INSERT_SQL} VALUES (%s, {_VALUES}) RETURNING id"
            rows = [
                (*_execute(insert, [number, *values])[0], number, mine, *(released if mine else (None, None)))
                for number, mine in numbered
            ]
    if not rows:
        raise WebhookEvent.DoesNotExist(f"webhook event {event.pk} was deleted while it was being delivered")
    attempt.pk, attempt.number, mine, *released_row = rows[0]
    attempt._state.adding = False
    metrics.webhook_attempt("delivered" if result.succeeded else "retry" if delay is not None else "failed")
    if mine and delay is None and not result.succeeded:
        logger.warning("webhook %s failed after %s attempts", event.pk, count)
    elif mine and delay is not None and delay <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS:
        # Short waits ride on a countdown message; long ones are found by the poller.
        DELIVER_TASK.with_options(countdown=delay + 0.5).delay_on_commit(str(event.pk))
    _release(*released_row)
    return attempt


def _finish_without_url(event_id: UUID, token: UUID | None) -> None:
    pending = WebhookEvent.Status.PENDING
    if WebhookEvent.objects.filter(pk=event_id, lease_token=token).update(
        status=WebhookEvent.Status.SKIPPED, next_attempt_at=None, lease_token=None, lease_expires_at=None
    ):
        _release(*next(iter(_execute(_NEXT_SQL, [event_id, pending, pending])), (None, None)))
