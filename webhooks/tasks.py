from __future__ import annotations

from celery import shared_task

from core.wakeup import woken
from webhooks import delivery, services


@shared_task(acks_late=True, ignore_result=True)
def webhook_dispatch() -> None:
    woken(services.DISPATCH_TASK)  # before reading: an event committed from now on wakes the next run
    services.webhook_dispatch()


@shared_task(acks_late=True, ignore_result=True)
def webhook_deliver(event_id: str, lease_token: str | None = None, waited: int = 0) -> None:
    delivery.webhook_deliver(event_id=event_id, lease_token=lease_token, waited=waited)


@shared_task(ignore_result=True)
def webhook_poll_due() -> None:
    services.webhook_poll_due()
