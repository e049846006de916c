"""Delivery in two statements (claim, record): what each one guarantees, on SQLite and PostgreSQL alike, and
the statement count on PostgreSQL."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from webhooks import delivery, services
from webhooks.delivery import PostResult, webhook_deliver
from webhooks.models import WebhookAttempt, WebhookEvent
from webhooks.receiver import Reply
from webhooks.tests.events import expire_lease, make_due, publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent_again(monkeypatch):
    """The delivery messages sent again (held back, or a retry's countdown): (args, countdown)."""
    from webhooks import tasks

    sent = []
    monkeypatch.setattr(
        tasks.webhook_deliver,
        "apply_async",
        lambda args, kwargs=None, *, countdown: sent.append((args, countdown)),
    )
    return sent


@pytest.mark.postgres
@pytest.mark.parametrize("status", [200, 500])
def test_a_delivery_is_two_statements_on_postgresql(merchant, receiver, status):
    receiver.replies = [Reply(status=status)]
    event = publish(merchant.company)

    with CaptureQueriesContext(connection) as queries:
        attempt = webhook_deliver(event_id=event.pk)

    assert attempt is not None and attempt.status_code == status
    # The claim (an UPDATE ... RETURNING), then the record (the event's UPDATE and the attempt's INSERT).
    assert [query["sql"].split()[0] for query in queries] == ["UPDATE", "WITH"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # each atomic block below is a transaction of its own
def test_only_the_claims_own_transaction_commits_without_waiting_for_the_disk(merchant, receiver):
    event = publish(merchant.company)
    make_due(event)

    def setting() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    with transaction.atomic():  # to look inside the claim's transaction, which is its statement's otherwise
        assert setting() == "on"
        assert delivery._claim(event.pk, None) is not None
        assert setting() == "off"
    assert setting() == "on"  # the record, and everything else on this connection, waits for the disk
    with transaction.atomic():
        assert delivery._claim(event.pk, None) is None  # leased: nothing claimed
    assert setting() == "on"


def test_the_returned_attempt_is_the_recorded_row(merchant, receiver):
    event = publish(merchant.company)

    attempt = webhook_deliver(event_id=event.pk)

    stored = WebhookAttempt.objects.get(pk=attempt.pk)
    assert (attempt.number, attempt.event_id, attempt.succeeded) == (1, event.pk, True)
    assert (stored.number, stored.status_code, stored.response_excerpt, stored.url) == (
        1,
        200,
        "ok",
        receiver.url,
    )
    assert stored.request_headers == attempt.request_headers
    assert stored.request_headers["webhook-id"] == str(event.pk)
    event.refresh_from_db()
    assert (event.status, event.attempts_recorded, event.lease_token, event.lease_expires_at) == (
        "delivered",
        1,
        None,
        None,
    )


def test_failed_posts_are_numbered_in_turn_and_retried_on_the_schedule(
    merchant, receiver, sent_again, django_capture_on_commit_callbacks
):
    receiver.replies = [Reply(status=500, body=b"boom"), Reply(status=503)]
    event = publish(merchant.company)

    before = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        first = webhook_deliver(event_id=event.pk)
    event.refresh_from_db()
    first_wait = (event.next_attempt_at - before).total_seconds()
    after_first = (event.status, event.attempt_count, event.attempts_recorded, event.lease_token)
    make_due(event)
    before = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        second = webhook_deliver(event_id=event.pk)
    event.refresh_from_db()
    second_wait = (event.next_attempt_at - before).total_seconds()

    assert (first.number, first.status_code, first.response_excerpt) == (1, 500, "boom")
    assert (second.number, second.status_code) == (2, 503)
    assert after_first == ("pending", 1, 1, None)
    assert (event.status, event.attempt_count, event.attempts_recorded, event.lease_token) == (
        "pending",
        2,
        2,
        None,
    )
    assert 4.4 <= first_wait <= 5.6  # 5 s, with jitter
    assert 269 <= second_wait <= 331  # 300 s, with jitter
    # Both waits are short enough for a countdown message, half a second after the attempt is due.
    assert [args for args, _ in sent_again] == [(str(event.pk),)] * 2
    assert 4.9 <= sent_again[0][1] <= 6.1
    assert 269.5 <= sent_again[1][1] <= 331.5
    assert list(event.attempts.values_list("number", flat=True)) == [1, 2]


def test_the_last_failure_fails_the_event_with_a_warning_and_no_message(
    merchant, receiver, settings, sent_again, caplog, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = [5]
    receiver.default = Reply(status=500)
    event = publish(merchant.company)

    with django_capture_on_commit_callbacks(execute=True):
        webhook_deliver(event_id=event.pk)
        make_due(event)
        last = webhook_deliver(event_id=event.pk)

    event.refresh_from_db()
    assert last.number == 2
    assert (event.status, event.attempt_count, event.next_attempt_at) == ("failed", 2, None)
    assert len(sent_again) == 1  # the first failure's retry only
    assert any(
        f"webhook {event.pk} failed after 2 attempts" in record.getMessage() for record in caplog.records
    )


def test_an_attempt_recorded_after_the_lease_was_taken_over_leaves_the_event_alone(
    merchant, receiver, sent_again, django_capture_on_commit_callbacks
):
    event = publish(merchant.company)
    stalled = delivery._claim(event.pk, None)  # a worker claimed the event and stalled past its lease...
    expire_lease(event)
    owner = delivery._claim(event.pk, None)  # ...and another delivery took it over
    assert stalled is not None and owner is not None
    leased = WebhookEvent.objects.values_list("lease_token", "lease_expires_at").get(pk=event.pk)
    answered = PostResult(timezone.now(), 3, 200, "ok", "")

    with django_capture_on_commit_callbacks(execute=True):
        late = delivery._record(stalled, receiver.url, {}, answered)
    event.refresh_from_db()

    # The late attempt is recorded, with the next number, but the event stays the new owner's.
    assert (late.number, late.succeeded) == (1, True)
    assert leased[0] == owner.lease_token
    assert (event.lease_token, event.lease_expires_at) == leased
    assert (event.status, event.attempt_count, event.attempts_recorded, event.delivered_at) == (
        "pending",
        0,
        1,
        None,
    )

    failed = PostResult(timezone.now(), 3, 500, "", "")
    with django_capture_on_commit_callbacks(execute=True):
        own = delivery._record(owner, receiver.url, {}, failed)
    event.refresh_from_db()

    # The owner's attempt decides: the first failure of its series, retried on the schedule.
    assert own.number == 2
    assert (event.status, event.attempt_count, event.attempts_recorded, event.lease_token) == (
        "pending",
        1,
        2,
        None,
    )
    assert [args for args, _ in sent_again] == [(str(event.pk),)]  # from the owner's record only
    assert list(event.attempts.values_list("number", "succeeded")) == [(1, True), (2, False)]


def test_a_late_attempt_of_an_event_redelivered_since_only_takes_a_number(merchant, receiver):
    event = publish(merchant.company)
    stalled = delivery._claim(event.pk, None)
    expire_lease(event)
    services.webhook_redeliver(company=merchant.company, event_id=event.pk)  # clears the lease

    late = delivery._record(stalled, receiver.url, {}, PostResult(timezone.now(), 3, 500, "", ""))
    event.refresh_from_db()

    assert late.number == 1
    assert (event.status, event.attempt_count, event.attempts_recorded, event.lease_token) == (
        "pending",
        0,
        1,
        None,
    )


def test_numbers_continue_across_redeliveries(merchant, receiver):
    event = publish(merchant.company)
    webhook_deliver(event_id=event.pk)

    services.webhook_redeliver(company=merchant.company, event_id=event.pk)
    again = webhook_deliver(event_id=event.pk)

    event.refresh_from_db()
    assert again.number == 2
    assert (event.status, event.attempt_count, event.attempts_recorded) == ("delivered", 0, 2)


def test_attempts_numbered_past_the_counter_move_it_on(merchant, receiver):
    """An attempt written without the counter (the previous version, during an upgrade) is never numbered
    twice."""
    event = publish(merchant.company)
    WebhookAttempt.objects.create(
        event=event, number=1, url=receiver.url, started_at=timezone.now(), duration_ms=1, succeeded=False
    )

    attempt = webhook_deliver(event_id=event.pk)

    event.refresh_from_db()
    assert attempt.number == 2
    assert event.attempts_recorded == 2


def test_a_held_back_event_is_sent_again_backing_off_and_not_claimed(merchant, receiver, sent_again):
    publish(merchant.company, status="created", invoice_id="same")
    later = publish(merchant.company, status="pending", invoice_id="same")
    poller_token = "6f1c5a84-0c6e-4bb0-9a55-6d1e1f1d2a11"
    reserved = timezone.now() + timedelta(seconds=60)
    WebhookEvent.objects.filter(pk=later.pk).update(lease_token=poller_token, lease_expires_at=reserved)

    own_message = webhook_deliver(event_id=later.pk, waited=3)
    pollers_message = webhook_deliver(event_id=later.pk, lease_token=poller_token, waited=5)

    later.refresh_from_db()
    assert own_message is None and pollers_message is None
    assert sent_again == [
        ((str(later.pk), None, 4), 8),
        ((str(later.pk), poller_token, 6), 30),
    ]
    assert (str(later.lease_token), later.lease_expires_at) == (poller_token, reserved)  # not claimed
    assert (later.attempt_count, later.attempts_recorded) == (0, 0)
    assert receiver.received == []


def test_a_duplicate_message_is_dropped_without_being_sent_again(merchant, receiver, sent_again):
    event = publish(merchant.company)
    assert delivery._claim(event.pk, None) is not None  # another delivery holds the lease

    assert webhook_deliver(event_id=event.pk) is None
    expire_lease(event)
    WebhookEvent.objects.filter(pk=event.pk).update(status="delivered")
    assert webhook_deliver(event_id=event.pk) is None  # done since

    assert sent_again == []
    assert receiver.received == []


def test_an_event_claimable_again_right_after_a_failed_claim_is_sent_again(
    merchant, receiver, sent_again, monkeypatch
):
    """The claim found it held back; the earlier event's first attempt was recorded just after: the message
    is not dropped (which would leave the event to the poller) but sent again."""
    event = publish(merchant.company)
    monkeypatch.setattr(delivery, "_claim", lambda event_id, token: None)

    assert webhook_deliver(event_id=event.pk) is None

    assert sent_again == [((str(event.pk), None, 1), 1)]


def test_a_company_without_url_at_the_claim_skips_the_event(merchant, receiver):
    from payments.services import company_set_webhook_url

    event = publish(merchant.company)
    company_set_webhook_url(company_id=merchant.company.pk, url="")

    assert webhook_deliver(event_id=event.pk) is None

    event.refresh_from_db()
    assert (event.status, event.lease_token, event.attempts_recorded) == ("skipped", None, 0)


def _wait_for_a_lock_wait(deadline_seconds: float = 10) -> None:
    """Until another connection waits for a lock (seen in pg_stat_activity, not assumed after a pause)."""
    deadline = time.monotonic() + deadline_seconds
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            threading.Event().wait(0.01)
    raise AssertionError("no connection waited for the event's row lock")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_deliveries_recording_at_once_take_consecutive_numbers(merchant, receiver):
    """The late recorder's statement starts (and takes its snapshot) before the owner's record commits, then
    waits for the row lock: its number must come from the row as the owner left it."""
    event = publish(merchant.company)
    stalled = delivery._claim(event.pk, None)
    expire_lease(event)
    owner = delivery._claim(event.pk, None)
    holding, release = threading.Event(), threading.Event()
    recorded: dict[str, object] = {}

    def owner_records_and_holds_the_lock() -> None:
        try:
            with transaction.atomic():
                recorded["owner"] = delivery._record(
                    owner, receiver.url, {}, PostResult(timezone.now(), 1, 200, "", "")
                )
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    def stalled_records() -> None:
        try:
            recorded["stalled"] = delivery._record(
                stalled, receiver.url, {}, PostResult(timezone.now(), 1, 500, "", "")
            )
        except Exception as exc:  # an IntegrityError if the number were read from a stale snapshot
            recorded["stalled"] = exc
        finally:
            connection.close()

    first = threading.Thread(target=owner_records_and_holds_the_lock)
    first.start()
    assert holding.wait(10)
    second = threading.Thread(target=stalled_records)
    second.start()
    try:
        _wait_for_a_lock_wait()
    finally:
        release.set()
        first.join(10)
        second.join(10)

    assert isinstance(recorded["stalled"], WebhookAttempt), recorded["stalled"]
    assert (recorded["owner"].number, recorded["stalled"].number) == (1, 2)
    event.refresh_from_db()
    assert (event.status, event.attempts_recorded, event.lease_token) == ("delivered", 2, None)
    assert list(event.attempts.values_list("number", "succeeded")) == [(1, True), (2, False)]


@pytest.mark.django_db(transaction=True)
def test_the_migration_sets_the_counter_from_the_attempts(merchant):
    before, after = [("webhooks", "0002_outbox_indexes")], [("webhooks", "0003_attempts_recorded")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        Event, Attempt = (
            old.get_model("webhooks", "WebhookEvent"),
            old.get_model("webhooks", "WebhookAttempt"),
        )
        now = timezone.now()
        fields = {
            "company_id": merchant.company.pk,
            "family": "invoice",
            "event_status": "created",
            "body": "{}",
        }
        tried = Event.objects.create(object_id="tried", **fields)
        Event.objects.create(object_id="fresh", **fields)
        for number in (1, 2, 3):
            Attempt.objects.create(
                event=tried,
                number=number,
                url="https://x.test",
                started_at=now,
                duration_ms=1,
                succeeded=False,
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(after)

    counters = dict(WebhookEvent.objects.values_list("object_id", "attempts_recorded"))
    assert counters == {"tried": 3, "fresh": 0}
