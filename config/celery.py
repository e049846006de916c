"""The Celery app. Worker and beat load production settings unless DJANGO_SETTINGS_MODULE says otherwise."""

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import (
    beat_init,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
)

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


@worker_init.connect
@worker_process_init.connect
def settle_after_start_up(**kwargs: Any) -> None:
    """The worker (and each pool process it forks) has loaded everything: config.runtime.settle_gc."""
    from config.runtime import settle_gc

    settle_gc()


@beat_init.connect
def log_beat_settings(**kwargs: Any) -> None:
    logger.info("Kassa beat settings: %s", _settings_module())


def _settings_module() -> str:
    return os.environ.get("DJANGO_SETTINGS_MODULE", "")


@task_prerun.connect
@task_postrun.connect
def close_old_database_connections(sender: Any = None, **kwargs: Any) -> None:
    """Around each task what Django does around each request: a connection past CONN_MAX_AGE, broken, or
    failing its health check (CONN_HEALTH_CHECKS) is closed; a good one is kept for the next task. Not for
    a task run eagerly (`apply()`) inside its caller: the caller's connection and transaction stay as they
    are, as Celery's own fixup leaves them."""
    from django.db import close_old_connections

    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    close_old_connections()
