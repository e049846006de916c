"""The Celery app. Worker and beat load production settings unless DJANGO_SETTINGS_MODULE says otherwise."""

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import beat_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("kassa", task_cls="config.celery_task:KassaTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger("kassa.startup")


@worker_ready.connect
def log_worker_settings(**kwargs: Any) -> None:
    """Which settings this worker runs and whether it may connect to private addresses (the SSRF guard)."""
    from django.conf import settings

    guard = (
        "OFF: private and loopback webhook hosts allowed (WEBHOOK_ALLOW_PRIVATE_HOSTS)"
        if settings.WEBHOOK_ALLOW_PRIVATE_HOSTS
        else "on: private and loopback webhook hosts refused"
    )
    logger.info("Kassa worker settings: %s; webhook SSRF guard %s", _settings_module(), guard)


@beat_init.connect
def log_beat_settings(**kwargs: Any) -> None:
    logger.info("Kassa beat settings: %s", _settings_module())


def _settings_module() -> str:
    return os.environ.get("DJANGO_SETTINGS_MODULE", "")
