"""Shared by the delivery tests: an event to deliver, and moving it in time without waiting."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from invoices.events import invoice_body
from webhooks.models import WebhookEvent
from webhooks.services import webhook_publish


def publish(company, status: str = "created", invoice_id: str = "inv-1") -> WebhookEvent:
    """An invoice event of `company`, published as a state change publishes it."""
    return webhook_publish(
        company=company,
        family="invoice",
        object_id=invoice_id,
        body=invoice_body(invoice_id=invoice_id, status=status),
    )


def make_due(event: WebhookEvent) -> None:
    """The event's next attempt is due now (its retry wait is over)."""
    WebhookEvent.objects.filter(pk=event.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))


def expire_lease(event: WebhookEvent) -> None:
    """The delivery lease on the event has run out (its worker died, say)."""
    WebhookEvent.objects.filter(pk=event.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def capture_messages(monkeypatch) -> list[tuple[str, tuple]]:
    """Every task message the code under test publishes from now on, as (task name, args), kept here instead
    of reaching the broker."""
    from core.celery_task import KassaTask

    sent: list[tuple[str, tuple]] = []

    def apply_async(self, args=None, kwargs=None, **options):
        sent.append((self.name, tuple(args or ())))

    monkeypatch.setattr(KassaTask, "apply_async", apply_async)
    return sent
