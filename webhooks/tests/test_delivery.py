import base64
import hashlib
import hmac
import json
import socket
import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core import ssrf
from core.wakeup import woken
from invoices.events import invoice_body
from payments.services import company_rotate_signing_secret, company_set_webhook_url
from webhooks import delivery, services
from webhooks.delivery import DELIVER_TASK, webhook_deliver
from webhooks.models import WebhookEvent
from webhooks.receiver import Reply, WebhookReceiver
from webhooks.services import DISPATCH_TASK
from webhooks.tests.events import capture_messages, make_due, publish

pytestmark = pytest.mark.django_db


def test_receiver_gets_a_body_signed_as_documented(merchant, receiver):
    event = publish(merchant.company)

    attempt = webhook_deliver(event_id=event.pk)

    assert attempt.succeeded
    (got,) = receiver.received
    assert got.body == b'{"invoiceId":"inv-1","status":"created","message":"Invoice created"}'
    independent = hmac.new(merchant.signing_secret.strip().encode(), got.body, hashlib.sha512).hexdigest()
    assert got.headers["signature"] == independent
    key = base64.b64decode(merchant.signing_secret.removeprefix("whsec_"))
    signed = f"{got.headers['webhook-id']}.{got.headers['webhook-timestamp']}.".encode() + got.body
    assert (
        got.headers["webhook-signature"]
        == "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    )
    assert got.headers["webhook-id"] == str(event.pk)
    assert abs(int(got.headers["webhook-timestamp"]) - time.time()) < 30
    assert got.headers["content-type"] == "application/json"
    assert got.headers["user-agent"].startswith("Kassa-Webhooks/")
    event.refresh_from_db()
    assert event.status == "delivered"
    assert event.delivered_at is not None


def test_500_twice_then_200_is_three_attempts_and_one_delivery(merchant, receiver):
    receiver.replies = [Reply(status=500, body=b"boom"), Reply(status=500, body=b"boom again")]
    event = publish(merchant.company)

    first = webhook_deliver(event_id=event.pk)
    early = webhook_deliver(event_id=event.pk)  # not due yet: the 5 s retry has not come
    make_due(event)
    second = webhook_deliver(event_id=event.pk)
    make_due(event)
    third = webhook_deliver(event_id=event.pk)
    make_due(event)
    after = webhook_deliver(event_id=event.pk)

    assert early is None and after is None
    assert [a.status_code for a in (first, second, third)] == [500, 500, 200]
    assert [a.succeeded for a in event.attempts.order_by("number")] == [False, False, True]
    assert first.response_excerpt == "boom"
    assert len(receiver.received) == 3
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    event.refresh_from_db()
    assert event.status == "delivered"


def test_a_failed_attempt_is_rescheduled_after_about_five_seconds(merchant, receiver):
    receiver.replies = [Reply(status=503)]
    event = publish(merchant.company)

    before = timezone.now()
    webhook_deliver(event_id=event.pk)

    event.refresh_from_db()
    wait = (event.next_attempt_at - before).total_seconds()
    assert event.status == "pending"
    assert event.attempt_count == 1
    assert 4.4 <= wait <= 5.7


def test_302_is_a_failure_and_the_redirect_is_not_followed(merchant, receiver):
    with WebhookReceiver() as elsewhere:
        receiver.replies = [Reply(status=302, headers={"Location": elsewhere.url})]
        event = publish(merchant.company)

        attempt = webhook_deliver(event_id=event.pk)

        assert attempt.status_code == 302
        assert not attempt.succeeded
        assert "not followed" in attempt.error
        assert elsewhere.received == []


def test_a_hanging_receiver_times_out_at_ten_seconds_and_the_next_event_goes_out(merchant, receiver):
    receiver.replies = [Reply(delay=14)]
    hanging = publish(merchant.company, invoice_id="slow")
    next_one = publish(merchant.company, invoice_id="fast")

    t0 = time.monotonic()
    attempt = webhook_deliver(event_id=hanging.pk)
    elapsed = time.monotonic() - t0
    following = webhook_deliver(event_id=next_one.pk)

    assert 9.5 <= elapsed < 12
    assert attempt.status_code is None
    assert "timed out" in attempt.error or "deadline exceeded" in attempt.error
    assert 9500 <= attempt.duration_ms < 12000
    assert following.succeeded


def test_connection_refused_is_a_failed_attempt(merchant, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: nothing listens there
    company_set_webhook_url(company_id=merchant.company.pk, url=f"http://127.0.0.1:{port}/hook")
    merchant.company.refresh_from_db()
    event = publish(merchant.company)

    attempt = webhook_deliver(event_id=event.pk)

    assert not attempt.succeeded
    assert attempt.status_code is None
    assert "ConnectionError" in attempt.error


def test_the_ssrf_guard_applies_at_connect_time(merchant, settings, monkeypatch, caplog):
    with WebhookReceiver() as local:
        # Saved while the name looked public; now it resolves to loopback (DNS rebinding).
        company_set_webhook_url(
            company_id=merchant.company.pk, url=f"http://hooks.shop.example:{local.port}/h"
        )
        merchant.company.refresh_from_db()
        monkeypatch.setattr(
            ssrf,
            "_getaddrinfo",
            lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))],
        )
        event = publish(merchant.company)

        attempt = webhook_deliver(event_id=event.pk)

        assert not attempt.succeeded
        assert "SSRF" in attempt.error
        assert local.received == []
        assert any("refused by the SSRF guard" in record.getMessage() for record in caplog.records)


def test_the_last_failure_fails_the_event(merchant, receiver, settings):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = [5, 300]
    receiver.default = Reply(status=500)
    event = publish(merchant.company)

    for _ in range(3):
        make_due(event)
        webhook_deliver(event_id=event.pk)
    event.refresh_from_db()
    failed_schedule = event.next_attempt_at
    make_due(event)
    extra = webhook_deliver(event_id=event.pk)

    event.refresh_from_db()
    assert failed_schedule is None
    assert extra is None
    assert event.status == "failed"
    assert event.attempts.count() == 3


@pytest.mark.parametrize(("failures", "base"), [(1, 5), (2, 300), (3, 1800), (4, 7200), (9, 86400)])
def test_retry_delays_follow_the_schedule_with_jitter(failures, base):
    delays = [delivery._retry_delay(failures) for _ in range(200)]

    assert all(base * 0.9 <= d <= base * 1.1 for d in delays)
    assert len(set(delays)) > 1  # jitter, not a fixed delay


def test_no_more_delays_after_the_ninth_retry():
    assert delivery._retry_delay(10) is None


def test_events_of_a_company_without_url_are_skipped_then_redeliverable(merchant, receiver):
    company_set_webhook_url(company_id=merchant.company.pk, url="")
    merchant.company.refresh_from_db()
    event = publish(merchant.company)
    assert event.status == "skipped"
    assert webhook_deliver(event_id=event.pk) is None

    company_set_webhook_url(company_id=merchant.company.pk, url=receiver.url)
    services.webhook_redeliver(company=merchant.company, event_id=event.pk)
    attempt = webhook_deliver(event_id=event.pk)

    assert attempt.succeeded
    assert len(receiver.received) == 1


def test_url_removed_before_delivery_marks_the_event_skipped(merchant, receiver):
    event = publish(merchant.company)
    company_set_webhook_url(company_id=merchant.company.pk, url="")

    result = webhook_deliver(event_id=event.pk)

    event.refresh_from_db()
    assert result is None
    assert event.status == "skipped"
    assert receiver.received == []


def test_redelivering_a_delivered_event_sends_it_again_with_the_same_id(merchant, receiver):
    event = publish(merchant.company)
    webhook_deliver(event_id=event.pk)

    services.webhook_redeliver(company=merchant.company, event_id=event.pk)
    webhook_deliver(event_id=event.pk)

    assert [r.headers["webhook-id"] for r in receiver.received] == [str(event.pk)] * 2
    assert event.attempts.count() == 2


def test_signing_uses_the_current_secret_at_send_time(merchant, receiver):
    event = publish(merchant.company)
    new_secret = company_rotate_signing_secret(company_id=merchant.company.pk)
    receiver.secret = new_secret

    webhook_deliver(event_id=event.pk)

    assert receiver.received[0].verified is True


def test_publish_is_part_of_the_callers_transaction(merchant, receiver, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        try:
            with transaction.atomic():
                publish(merchant.company)
                raise RuntimeError("state change failed")
        except RuntimeError:
            pass

    assert WebhookEvent.objects.count() == 0
    assert callbacks == []


def test_publish_wakes_the_dispatcher_only_on_commit_and_it_sends_the_delivery(
    merchant, receiver, django_capture_on_commit_callbacks, monkeypatch
):
    sent = capture_messages(monkeypatch)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        event = publish(merchant.company)
        assert sent == []

    for callback in callbacks:
        callback()
    assert sent == [(DISPATCH_TASK, ())]

    with django_capture_on_commit_callbacks(execute=True):
        assert services.webhook_dispatch() == 1
    event.refresh_from_db()
    assert sent[1:] == [(DELIVER_TASK, (str(event.pk), str(event.lease_token)))]  # reserved for the message
    assert webhook_deliver(event_id=event.pk, lease_token=event.lease_token).succeeded


def test_the_dispatcher_takes_new_events_only_once_and_never_retries(
    merchant, receiver, django_capture_on_commit_callbacks, monkeypatch
):
    sent = capture_messages(monkeypatch)
    receiver.replies = [Reply(status=500)]
    failed = publish(merchant.company, invoice_id="failed")
    webhook_deliver(event_id=failed.pk)  # first attempt failed: its retry is the countdown's or the poller's
    make_due(failed)
    fresh = [publish(merchant.company, invoice_id=f"new-{index}") for index in range(3)]
    del sent[:]

    with django_capture_on_commit_callbacks(execute=True):
        first = services.webhook_dispatch()
        second = services.webhook_dispatch()

    assert (first, second) == (3, 0)
    assert sorted(args[0] for _, args in sent) == sorted(str(event.pk) for event in fresh)
    assert {name for name, _ in sent} == {DELIVER_TASK}


def test_the_dispatcher_sends_every_new_event_in_batches(
    merchant, receiver, django_capture_on_commit_callbacks, monkeypatch, settings
):
    sent = capture_messages(monkeypatch)
    settings.WEBHOOK_POLL_BATCH = 2
    events = [publish(merchant.company, invoice_id=f"inv-{index}") for index in range(5)]
    del sent[:]

    with django_capture_on_commit_callbacks(execute=True):
        assert services.webhook_dispatch() == 5

    assert sorted(args[0] for _, args in sent) == sorted(str(event.pk) for event in events)
    assert len({args[1] for _, args in sent}) == 3  # one reservation per batch: 2 + 2 + 1


def test_a_dispatcher_run_that_reaches_its_batch_limit_wakes_the_next_run(
    merchant, receiver, django_capture_on_commit_callbacks, monkeypatch, settings
):
    sent = capture_messages(monkeypatch)
    settings.WEBHOOK_POLL_BATCH = 2
    monkeypatch.setattr(services, "DISPATCH_MAX_BATCHES", 2)
    events = [publish(merchant.company, invoice_id=f"inv-{index}") for index in range(5)]
    del sent[:]
    woken(DISPATCH_TASK)  # this run's own message has been taken

    with django_capture_on_commit_callbacks(execute=True):
        first = services.webhook_dispatch()
    assert first == 4 and sent[-1] == (DISPATCH_TASK, ())  # the fifth waits for the next run
    with django_capture_on_commit_callbacks(execute=True):
        assert services.webhook_dispatch() == 1

    delivered = sorted(args[0] for name, args in sent if name == DELIVER_TASK)
    assert delivered == sorted(str(event.pk) for event in events)


def test_poller_enqueues_due_events_once_until_their_lease_expires(
    merchant, receiver, monkeypatch, django_capture_on_commit_callbacks
):
    sent = capture_messages(monkeypatch)
    lost = publish(merchant.company, invoice_id="lost")
    publish(merchant.company, invoice_id="fresh")  # the dispatcher takes it in a moment: not the poller's job
    WebhookEvent.objects.filter(pk=lost.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=1))
    del sent[:]

    with django_capture_on_commit_callbacks(execute=True):
        first = services.webhook_poll_due()
        second = services.webhook_poll_due()
        WebhookEvent.objects.filter(pk=lost.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        third = services.webhook_poll_due()

    assert (first, second, third) == (1, 0, 1)
    assert [args[0] for _, args in sent] == [str(lost.pk), str(lost.pk)]


def test_the_pollers_message_delivers_with_its_lease(
    merchant, receiver, monkeypatch, django_capture_on_commit_callbacks
):
    sent = capture_messages(monkeypatch)
    lost = publish(merchant.company)
    WebhookEvent.objects.filter(pk=lost.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=1))
    del sent[:]
    with django_capture_on_commit_callbacks(execute=True):
        services.webhook_poll_due()

    duplicate = webhook_deliver(event_id=lost.pk)  # another message, arriving late: the lease says no
    attempt = webhook_deliver(event_id=sent[0][1][0], lease_token=sent[0][1][1])

    assert duplicate is None
    assert attempt.succeeded
    assert len(receiver.received) == 1


def test_an_expired_delivery_lease_is_taken_over(merchant, receiver):
    event = publish(merchant.company)
    # A worker claimed it and was killed before recording anything.
    assert delivery._claim(event.pk, None) is not None
    assert webhook_deliver(event_id=event.pk) is None
    WebhookEvent.objects.filter(pk=event.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    attempt = webhook_deliver(event_id=event.pk)

    assert attempt.succeeded


def test_a_non_json_utf8_response_excerpt_is_cut_at_one_kib(merchant, receiver):
    receiver.replies = [Reply(status=400, body=("é" * 2000).encode())]
    event = publish(merchant.company)

    attempt = webhook_deliver(event_id=event.pk)

    assert len(attempt.response_excerpt.encode("utf-8", errors="replace")) <= 1024 + 3
    assert attempt.response_excerpt.startswith("éé")
    assert json.loads(event.body)["status"] == "created"


def test_publish_many_writes_each_event_and_enqueues_only_deliverable_ones(
    merchant, other_merchant, receiver, monkeypatch, django_capture_on_commit_callbacks
):
    sent = capture_messages(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        events = services.webhook_publish_many(
            [
                (merchant.company, "invoice", "a", invoice_body(invoice_id="a", status="closed")),
                (other_merchant.company, "invoice", "b", invoice_body(invoice_id="b", status="closed")),
            ]
        )

    assert [e.status for e in events] == ["pending", "skipped"]
    assert events[0].body == '{"invoiceId":"a","status":"closed","message":"Invoice closed"}'
    assert sent == [(DISPATCH_TASK, ())]
    with django_capture_on_commit_callbacks(execute=True):
        services.webhook_dispatch()
    assert [args[0] for _, args in sent[1:]] == [str(events[0].pk)]


def test_events_of_one_object_go_out_in_order(merchant, receiver, monkeypatch):
    resent = []
    from webhooks import tasks

    monkeypatch.setattr(
        tasks.webhook_deliver, "apply_async", lambda args, kwargs=None, countdown=None: resent.append(args)
    )
    created = publish(merchant.company, status="created", invoice_id="same")
    pending = publish(merchant.company, status="pending", invoice_id="same")
    other = publish(merchant.company, status="created", invoice_id="another")

    early = webhook_deliver(event_id=pending.pk)  # its message raced ahead of the earlier one's
    unrelated = webhook_deliver(event_id=other.pk)
    webhook_deliver(event_id=created.pk)
    late = webhook_deliver(event_id=pending.pk)

    assert early is None
    assert resent == [(str(pending.pk), None, 1)]
    assert unrelated.succeeded
    assert late.succeeded
    statuses = [json.loads(r.body)["status"] for r in receiver.received if b'"same"' in r.body]
    assert statuses == ["created", "pending"]


def test_lost_message_after_claim_does_not_spin_later_events(merchant, receiver, monkeypatch, settings):
    requeued = []
    from webhooks import tasks

    monkeypatch.setattr(
        tasks.webhook_deliver,
        "apply_async",
        lambda args, kwargs=None, countdown=None: requeued.append((args[2], countdown)),
    )
    first = publish(merchant.company, status="created", invoice_id="same")
    later = publish(merchant.company, status="pending", invoice_id="same")
    make_due(first)
    # The poller reserves the first event for its message, and that message is lost (the test's transaction
    # never commits: nothing is sent).
    services.webhook_poll_due()

    # The later event's own message, and each re-send of it while the first still waits for the poller.
    waited = 0
    for _ in range(8):
        webhook_deliver(event_id=later.pk, waited=waited)
        waited = requeued[-1][0]

    countdowns = [countdown for _, countdown in requeued]
    assert countdowns == [1, 2, 4, 8, 16, 30, 30, 30]  # backing off, never once a second
    assert settings.WEBHOOK_ENQUEUE_LEASE_SECONDS <= 60  # the lost message is given up on within a minute


def _capture_with_options(monkeypatch) -> list[tuple[str, tuple, dict]]:
    """Every task message sent from now on, as (task name, args, options such as `countdown`)."""
    from core.celery_task import KassaTask

    sent: list[tuple[str, tuple, dict]] = []
    monkeypatch.setattr(
        KassaTask,
        "apply_async",
        lambda self, args=None, kwargs=None, **options: sent.append((self.name, tuple(args or ()), options)),
    )
    return sent


@pytest.mark.parametrize("first_reply", [Reply(status=500), Reply(status=200)])
def test_the_end_of_an_attempt_releases_the_next_event_of_its_object_at_once(
    merchant, receiver, monkeypatch, django_capture_on_commit_callbacks, first_reply
):
    """Three events of one invoice whose later messages raced ahead of the first: each attempt's end sends
    the next event's message at once (no countdown), delivered or failed; no timer is waited for."""
    receiver.replies = [first_reply]
    statuses = ("created", "pending", "processing")
    events = [publish(merchant.company, status=status, invoice_id="same") for status in statuses]
    sent = _capture_with_options(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        services.webhook_dispatch()  # one message per event, each reserved for its message
    messages = {args[0]: args for _, args, _ in sent}
    for later in events[1:]:
        with django_capture_on_commit_callbacks(execute=True):
            assert webhook_deliver(event_id=later.pk, lease_token=messages[str(later.pk)][1]) is None
    del sent[:]  # the held-back messages' backoff re-sends: the fallback, not waited for here

    released = []
    for event in events:
        args = (str(event.pk), messages[str(event.pk)][1])
        with django_capture_on_commit_callbacks(execute=True):
            attempt = webhook_deliver(event_id=args[0], lease_token=args[1])
        assert attempt is not None
        released.append([(args, options) for name, args, options in sent if name == DELIVER_TASK])
        messages.update({args[0]: args for args, options in released[-1] if not options})
        del sent[:]

    assert [json.loads(got.body)["status"] for got in receiver.received] == list(statuses)
    retry = [(args, options) for args, options in released[0] if options]  # the first one's own retry, if any
    assert [args[0] for args, options in released[0] if not options] == [str(events[1].pk)]
    assert [args[0] for args, options in released[1] if not options] == [str(events[2].pk)]
    assert released[2] == []  # nothing after the last
    assert len(retry) == (1 if first_reply.status == 500 else 0)


def test_an_event_skipped_for_want_of_a_url_releases_the_next_of_its_object(
    merchant, receiver, monkeypatch, django_capture_on_commit_callbacks
):
    first, later = (publish(merchant.company, status=s, invoice_id="same") for s in ("created", "pending"))
    company_set_webhook_url(company_id=merchant.company.pk, url="")
    sent = _capture_with_options(monkeypatch)

    with django_capture_on_commit_callbacks(execute=True):
        assert webhook_deliver(event_id=first.pk) is None

    assert sent == [(DELIVER_TASK, (str(later.pk), None), {})]
    assert WebhookEvent.objects.get(pk=first.pk).status == "skipped"


def test_a_failing_earlier_event_does_not_hold_back_the_next(merchant, receiver):
    receiver.replies = [Reply(status=500)]
    created = publish(merchant.company, status="created", invoice_id="same")
    pending = publish(merchant.company, status="pending", invoice_id="same")
    webhook_deliver(event_id=created.pk)  # failed once: now on its retry schedule

    attempt = webhook_deliver(event_id=pending.pk)

    assert attempt.succeeded


@pytest.mark.parametrize(("answer", "connections"), [(b"ok", 1), (b"x" * 5000, 2)])
def test_deliveries_reuse_a_receivers_connection_once_its_answer_is_read(
    merchant, settings, answer, connections
):
    """A short answer is read whole and its connection carries the next POST; a long one (past the 1 KiB
    excerpt) is not drained, its connection is dropped, and the next POST opens a new one."""
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    with WebhookReceiver(keep_alive=True, default=Reply(body=answer)) as receiver:
        company_set_webhook_url(company_id=merchant.company.pk, url=receiver.url)
        merchant.company.refresh_from_db()
        events = [publish(merchant.company, invoice_id=f"inv-{n}") for n in range(2)]

        attempts = [webhook_deliver(event_id=event.pk) for event in events]

    assert all(attempt is not None and attempt.succeeded for attempt in attempts)
    assert len({got.client for got in receiver.received}) == connections
