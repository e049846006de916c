from __future__ import annotations

import json

import pytest
from django.core import mail

from alerts.delivery import alert_notifications_poll
from alerts.models import AlertNotification
from alerts.services import alert_raise, alert_resolve
from webhooks.receiver import Reply

pytestmark = pytest.mark.django_db

Status = AlertNotification.Status


def _raise(capture, kind="node_down", key="ltc", message="ltc node cannot be reached: refused"):
    with capture(execute=True):
        return alert_raise(kind=kind, key=key, message=message)


def test_an_opened_alert_reaches_the_webhook_signed_and_the_mail_once_each(
    operator_hook, messages, django_capture_on_commit_callbacks
):
    alert = _raise(django_capture_on_commit_callbacks)
    _raise(django_capture_on_commit_callbacks, message="timed out")  # counted, not told again
    duplicates = list(messages)

    messages.run()
    messages.extend(duplicates)  # the broker delivers every message a second time
    messages.run()
    assert alert_notifications_poll() == 0

    (got,) = operator_hook.received
    assert got.verified is True
    body = json.loads(got.body)
    webhook = AlertNotification.objects.get(channel="webhook")
    assert got.headers["webhook-id"] == body["eventId"] == str(webhook.pk)
    assert body["id"] == alert.pk
    assert {key: body[key] for key in ("event", "kind", "key", "message", "status", "count")} == {
        "event": "alert.opened",
        "kind": "node_down",
        "key": "ltc",
        "message": "ltc node cannot be reached: refused",
        "status": "open",
        "count": 1,
    }
    assert body["raisedAt"].endswith("Z") and body["resolvedAt"] is None
    (sent,) = mail.outbox
    assert sent.to == ["ops@kassa.test", "oncall@kassa.test"]
    assert sent.subject == "[Kassa alert] node_down ltc"
    assert "ltc node cannot be reached: refused" in sent.body and "/dashboard/alerts/" in sent.body
    assert set(AlertNotification.objects.values_list("status", "attempt_count")) == {(Status.SENT, 1)}


def test_the_resolution_is_told_too(operator_hook, messages, django_capture_on_commit_callbacks):
    _raise(django_capture_on_commit_callbacks)
    messages.run()

    with django_capture_on_commit_callbacks(execute=True):
        alert_resolve(kind="node_down", key="ltc")
    messages.run()

    bodies = [json.loads(got.body) for got in operator_hook.received]
    assert [(body["event"], body["status"]) for body in bodies] == [
        ("alert.opened", "open"),
        ("alert.resolved", "resolved"),
    ]
    assert bodies[1]["resolvedBy"] is None and bodies[1]["resolvedAt"]
    assert [message.subject for message in mail.outbox] == [
        "[Kassa alert] node_down ltc",
        "[Kassa resolved] node_down ltc",
    ]


def test_a_failed_send_is_retried_with_backoff_and_then_sent(
    settings, operator_hook, messages, clock, django_capture_on_commit_callbacks
):
    operator_hook.replies = [Reply(status=503), Reply(status=500)]
    _raise(django_capture_on_commit_callbacks)

    with django_capture_on_commit_callbacks(execute=True):
        messages.run()  # first attempt: 503
    webhook = AlertNotification.objects.get(channel="webhook")
    assert (webhook.status, webhook.attempt_count, webhook.last_error) == (Status.PENDING, 1, "HTTP 503")
    wait = (webhook.next_attempt_at - clock.now()).total_seconds()
    assert settings.ALERT_RETRY_SCHEDULE_SECONDS[0] - 5 < wait <= settings.ALERT_RETRY_SCHEDULE_SECONDS[0]
    assert [args[0] for _, args in messages] == [str(webhook.pk)]  # its countdown message

    with django_capture_on_commit_callbacks(execute=True):
        messages.run()  # the countdown message arrived early (a clock apart): not due, nothing sent
    assert len(operator_hook.received) == 1

    clock.advance(settings.ALERT_RETRY_SCHEDULE_SECONDS[0])
    messages.append(("alerts.tasks.alert_notification_send", (str(webhook.pk),)))
    with django_capture_on_commit_callbacks(execute=True):
        messages.run()  # second attempt: 500
    clock.advance(settings.ALERT_RETRY_SCHEDULE_SECONDS[1])
    with django_capture_on_commit_callbacks(execute=True):
        messages.run()  # third: 200

    webhook.refresh_from_db()
    assert (webhook.status, webhook.attempt_count, webhook.last_error) == (Status.SENT, 3, "")
    assert len({got.headers["webhook-id"] for got in operator_hook.received}) == 1  # one event, three tries
    assert len(mail.outbox) == 1  # the mail went out at the first attempt, the webhook's retries aside


def test_a_notification_failing_every_attempt_ends_failed(
    settings, operator_hook, messages, clock, django_capture_on_commit_callbacks
):
    settings.ALERT_RETRY_SCHEDULE_SECONDS = [10, 20]
    operator_hook.default = Reply(status=500)
    _raise(django_capture_on_commit_callbacks)

    for wait in (0, 10, 20):
        clock.advance(wait)
        with django_capture_on_commit_callbacks(execute=True):
            messages.run()

    webhook = AlertNotification.objects.get(channel="webhook")
    assert (webhook.status, webhook.attempt_count, webhook.next_attempt_at) == (Status.FAILED, 3, None)
    assert len(operator_hook.received) == 3


def test_a_mail_server_down_never_holds_back_the_webhook(
    operator_hook, messages, monkeypatch, django_capture_on_commit_callbacks
):
    def refuse(self, fail_silently=False):
        raise ConnectionRefusedError("[Errno 111] Connection refused")

    monkeypatch.setattr("django.core.mail.EmailMessage.send", refuse)
    _raise(django_capture_on_commit_callbacks)

    with django_capture_on_commit_callbacks(execute=True):
        messages.run()

    email = AlertNotification.objects.get(channel="email")
    assert (email.status, email.last_error) == (
        Status.PENDING,
        "ConnectionRefusedError: [Errno 111] Connection refused",
    )
    assert AlertNotification.objects.get(channel="webhook").status == Status.SENT
    assert len(operator_hook.received) == 1


def test_a_lost_message_is_found_by_the_poller(
    settings, operator_hook, messages, clock, django_capture_on_commit_callbacks
):
    _raise(django_capture_on_commit_callbacks)
    messages.clear()  # the broker restarted empty

    assert alert_notifications_poll() == 0  # within the grace: its message may still be on the way
    clock.advance(settings.ALERT_POLL_GRACE_SECONDS + 1)
    assert alert_notifications_poll() == 2
    messages.run()
    assert alert_notifications_poll() == 0

    assert len(operator_hook.received) == 1 and operator_hook.received[0].verified
    assert len(mail.outbox) == 1


def test_a_send_in_flight_is_not_sent_again_until_its_lease_runs_out(
    settings, operator_hook, messages, clock, django_capture_on_commit_callbacks
):
    from alerts import delivery

    _raise(django_capture_on_commit_callbacks)
    webhook = AlertNotification.objects.get(channel="webhook")
    assert delivery._claim(webhook.pk) is not None  # a worker took it, then died mid-send
    clock.advance(settings.ALERT_POLL_GRACE_SECONDS + 1)

    messages.clear()
    alert_notifications_poll()
    assert [args[0] for _, args in messages] == [str(AlertNotification.objects.get(channel="email").pk)]
    clock.advance(settings.ALERT_LEASE_SECONDS)
    messages.clear()
    alert_notifications_poll()
    messages.run()

    assert len(operator_hook.received) == 1
    assert AlertNotification.objects.get(pk=webhook.pk).status == Status.SENT


def test_the_ssrf_guard_refuses_a_private_operator_url_unless_allowed(
    settings, operator_hook, messages, django_capture_on_commit_callbacks
):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    _raise(django_capture_on_commit_callbacks)

    messages.run()

    webhook = AlertNotification.objects.get(channel="webhook")
    assert webhook.status == Status.PENDING and "SSRF guard" in webhook.last_error
    assert operator_hook.received == []


def test_the_guarded_client_sends_when_private_hosts_are_allowed_for_all_webhooks(
    settings, operator_hook, messages, django_capture_on_commit_callbacks
):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    _raise(django_capture_on_commit_callbacks)

    messages.run()

    assert [got.verified for got in operator_hook.received] == [True]


@pytest.mark.parametrize("allow_private", [True, False])
def test_plain_http_is_refused_without_webhook_allow_http(
    settings, operator_hook, messages, allow_private, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_ALLOW_HTTP = False
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE_HOSTS = allow_private
    _raise(django_capture_on_commit_callbacks)

    messages.run()

    webhook = AlertNotification.objects.get(channel="webhook")
    assert webhook.status == Status.FAILED and "https" in webhook.last_error
    assert operator_hook.received == []


def test_an_unsigned_webhook_is_never_sent(
    settings, operator_hook, messages, django_capture_on_commit_callbacks
):
    settings.ALERT_WEBHOOK_SECRET = " "
    _raise(django_capture_on_commit_callbacks)

    messages.run()

    webhook = AlertNotification.objects.get(channel="webhook")
    assert (webhook.status, webhook.attempt_count) == (Status.FAILED, 1)
    assert "ALERT_WEBHOOK_SECRET" in webhook.last_error and operator_hook.received == []


def test_raised_once_it_is_on_the_status_page_at_the_receiver_and_in_the_mail_once(
    client, operator_hook, messages, django_capture_on_commit_callbacks
):
    from tests.factories import UserFactory

    alert = _raise(
        django_capture_on_commit_callbacks, kind="deposit_reversed", key="ltc:ab12:0", message="<b>gone</b>"
    )
    messages.run()
    client.force_login(UserFactory(is_staff=True))

    text = client.get("/dashboard/alerts/").content.decode()

    assert f'data-alert-id="{alert.pk}"' in text and "deposit_reversed" in text and "ltc:ab12:0" in text
    assert "&lt;b&gt;gone&lt;/b&gt;" in text and "<b>gone</b>" not in text
    assert text.count('<span class="badge badge--delivered">sent</span>') == 2  # e-mail and webhook
    assert [json.loads(got.body)["id"] for got in operator_hook.received if got.verified] == [alert.pk]
    assert len(mail.outbox) == 1
