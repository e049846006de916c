from __future__ import annotations

from celery import shared_task

from notifications import delivery


@shared_task(acks_late=True, ignore_result=True)
def notification_send(notification_id: str) -> None:
    delivery.notification_send(notification_id=notification_id)


@shared_task(ignore_result=True)
def notifications_poll() -> None:
    delivery.notifications_poll()
