"""A real SMTP server on 127.0.0.1 that Django's SMTP backend talks to, and the sender as a worker runs it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from notifications import delivery
from notifications.models import Notification
from notifications.tests.smtp_server import SmtpServer


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    server = SmtpServer().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 5
    yield server
    server.stop()


def run_sender() -> int:
    """What the workers do with the send messages (and the poller with lost ones): one attempt at every due
    notification. Returns how many were sent."""
    due = Notification.objects.filter(status=Notification.Status.PENDING).values_list("pk", flat=True)
    sent = [delivery.notification_send(notification_id=pk) for pk in list(due)]
    return sum(1 for row in sent if row is not None and row.status == Notification.Status.SENT)
