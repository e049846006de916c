from __future__ import annotations

from celery import shared_task

from alerts import delivery


@shared_task(acks_late=True, ignore_result=True)
def alert_notification_send(notification_id: str) -> None:
    delivery.alert_notification_send(notification_id=notification_id)


@shared_task(ignore_result=True)
def alert_notifications_poll() -> None:
    delivery.alert_notifications_poll()
