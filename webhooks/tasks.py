from __future__ import annotations

from celery import shared_task

from webhooks import services


@shared_task(acks_late=True, ignore_result=True)
def webhook_deliver(event_id: str, lease_token: str | None = None, waited: int = 0) -> None:
    services.webhook_deliver(event_id=event_id, lease_token=lease_token, waited=waited)


@shared_task(ignore_result=True)
def webhook_poll_due() -> None:
    services.webhook_poll_due()
