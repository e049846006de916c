"""The alert channels under test: a real webhook receiver on 127.0.0.1, the e-mail outbox, captured task
messages run by hand, and the delivery clock moved without waiting."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from alerts import delivery
from webhooks.receiver import WebhookReceiver

SECRET = "whsec_" + "b3BlcmF0b3Itc2VjcmV0LWZvci10ZXN0cw=="  # base64 of "operator-secret-for-tests"


class Messages(list[tuple[str, tuple]]):
    """Task messages published by the code under test, kept here instead of reaching the broker."""

    def run(self) -> None:
        """Run (and forget) every alert send message: what a worker would do with them."""
        pending, self[:] = list(self), []
        for name, args in pending:
            if name == "alerts.tasks.alert_notification_send":
                delivery.alert_notification_send(notification_id=args[0])


@pytest.fixture
def messages(monkeypatch) -> Messages:
    from core.celery_task import KassaTask

    sent = Messages()

    def apply_async(self, args=None, kwargs=None, **options):
        sent.append((self.name, tuple(args or ())))

    monkeypatch.setattr(KassaTask, "apply_async", apply_async)
    return sent


@pytest.fixture
def operator_hook(settings) -> Iterator[WebhookReceiver]:
    """The operator's webhook receiver (it verifies signatures with SECRET) and two alert e-mail addresses."""
    with WebhookReceiver(secret=SECRET) as running:
        settings.ALERT_WEBHOOK_URL = running.url
        settings.ALERT_WEBHOOK_SECRET = SECRET
        settings.ALERT_WEBHOOK_ALLOW_PRIVATE_HOSTS = True  # the operator's own relay on a private address
        settings.ALERT_EMAILS = ["ops@kassa.test", "oncall@kassa.test"]
        yield running


class Clock:
    """The delivery code's clock (alerts.delivery._now), moved ahead by hand; it runs on meanwhile."""

    def __init__(self, monkeypatch) -> None:
        self.offset = timedelta()
        monkeypatch.setattr(delivery, "_now", self.now)

    def now(self) -> datetime:
        return timezone.now() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    return Clock(monkeypatch)
