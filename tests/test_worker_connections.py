"""A Celery worker keeps its database connection from task to task (Celery's Django fixup would close it
around every task), and still drops one that Django's rules say to drop."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery import signals
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection

from config.celery import app
from webhooks.tasks import webhook_poll_due

# Closing a connection to SQLite's in-memory test database would drop the database itself, so Django never
# does: only a server database shows the difference.
pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker_fixup() -> Iterator[DjangoWorkerFixup]:
    """The signal handlers a worker installs at start-up (what `celery worker` runs around each task)."""
    fixup = DjangoWorkerFixup(app).install()
    yield fixup
    signals.task_prerun.disconnect(fixup.on_task_prerun)
    signals.task_postrun.disconnect(fixup.on_task_postrun)
    signals.worker_process_init.disconnect(fixup.on_worker_process_init)
    signals.beat_embedded_init.disconnect(fixup.close_database)


def _run_tasks(count: int) -> None:
    for _ in range(count):
        signals.task_prerun.send(sender=webhook_poll_due, task_id="t", task=webhook_poll_due)
        connection.ensure_connection()  # the task uses the database
        signals.task_postrun.send(sender=webhook_poll_due, task_id="t", task=webhook_poll_due)


def test_tasks_reuse_the_workers_database_connection(worker_fixup, settings) -> None:  # type: ignore[no-untyped-def]
    connection.ensure_connection()
    first = connection.connection

    _run_tasks(5)

    assert connection.connection is first


def test_a_connection_past_its_age_is_replaced_between_tasks(worker_fixup) -> None:  # type: ignore[no-untyped-def]
    connection.ensure_connection()
    first = connection.connection
    connection.close_at = 0  # CONN_MAX_AGE has passed

    _run_tasks(1)

    assert connection.connection is not first


def test_a_task_run_eagerly_leaves_its_callers_transaction_alone() -> None:
    from django.db import transaction

    from payments.models import Company

    with transaction.atomic():
        connection.ensure_connection()
        first = connection.connection

        webhook_poll_due.apply()  # eager: in this process, inside this transaction

        assert connection.connection is first and not connection.needs_rollback
        Company.objects.count()  # the transaction is still usable
