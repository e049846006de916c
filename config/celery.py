"""The Celery app. Worker and beat load production settings unless DJANGO_SETTINGS_MODULE says otherwise."""

import contextlib
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import (
    beat_init,
    before_task_publish,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutting_down,
)

from core import broker, request_id

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

broker.install()  # the embedded broker's messages are written whole (core/broker.py)
app = Celery("kassa", task_cls="core.celery_task:KassaTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def add_operations_schedule(sender: Celery, **kwargs: Any) -> None:
    """The beat entries of config/settings/operations.py (OPERATIONS_BEAT_SCHEDULE), added to base's."""
    from django.conf import settings

    sender.conf.beat_schedule.update(getattr(settings, "OPERATIONS_BEAT_SCHEDULE", {}))


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
    """The worker (and each pool process it forks) has loaded everything: core.runtime.settle_gc."""
    from core.runtime import settle_gc

    settle_gc()


_shutdown_bounded = threading.Event()


@worker_shutting_down.connect
def bound_the_shutdown(**kwargs: Any) -> None:
    """A warm shutdown (the first SIGTERM or SIGINT) waits for the running tasks, which may never end (a
    node or a receiver that hangs) or whose pool may never be reaped (a pool child killed beside its
    parent by a signal to the process group). After WORKER_SHUTDOWN_SECONDS the worker kills its children
    and exits, whatever it is waiting for; an interrupted task is delivered again (acknowledged late) and
    does nothing twice. The kernel ends the process a few seconds later if even that cannot run."""
    from django.conf import settings

    if _shutdown_bounded.is_set():
        return
    _shutdown_bounded.set()
    seconds = float(settings.WORKER_SHUTDOWN_SECONDS)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # its default action: the kernel ends the process
    signal.alarm(int(seconds) + 5)
    threading.Thread(target=_end_after, args=(seconds,), name="kassa-shutdown-bound", daemon=True).start()


def _end_after(seconds: float) -> None:
    time.sleep(seconds)
    children = child_pids(os.getpid())
    logger.error(
        "worker: still shutting down after %s s (WORKER_SHUTDOWN_SECONDS): killing its %d child process(es) "
        "and exiting; their tasks are delivered again",
        seconds,
        len(children),
    )
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    logging.shutdown()
    os._exit(1)


def child_pids(parent: int) -> list[int]:
    """The processes whose parent is `parent` (a worker's: its pool, an embedded beat), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after its last ')'.
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(parent):
            found.append(int(stat.parent.name))
    return found


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


@setup_logging.connect
def use_django_logging(**kwargs: Any) -> None:
    """Worker and beat log as the web does (Django's LOGGING: JSON in production, core/logs.py): with a
    receiver here Celery configures no logging of its own, and worker_hijack_root_logger is off too."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)


@before_task_publish.connect
def carry_request_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    request_id.add_to_message(headers)


_task_ids: dict[str, Any] = {}  # task id -> the tokens that restore the id and objects the task found


@task_prerun.connect
def take_request_id(sender: Any = None, task_id: str | None = None, **kwargs: Any) -> None:
    """The task's log lines carry the id of the request that caused it, else the task's own id. A task run
    eagerly inside a request keeps the request's."""
    task_request = getattr(sender, "request", None)
    if getattr(task_request, "is_eager", False) or not task_id:
        return
    _task_ids[task_id] = (
        request_id.set_request_id(request_id.id_of_task(task_request)),
        request_id.start_objects(),
    )


@task_postrun.connect
def drop_request_id(task_id: str | None = None, **kwargs: Any) -> None:
    tokens = _task_ids.pop(task_id or "", None)
    if tokens is not None:
        id_token, objects_token = tokens
        request_id.reset_objects(objects_token)
        request_id.reset_request_id(id_token)
