"""Webhook deliveries by real Celery worker processes, one against two: the outbox scales by adding workers.

Each worker is `celery -A config worker --queues webhooks --concurrency 1`, the production command with one
process, started with the bench settings on the same PostgreSQL and Redis; a second one stands for a second
host. The events are published in one transaction to a local receiver that keeps connections alive and
checks every signature; after commit, the dispatcher (in a worker) sends one delivery message per event. The
rate is deliveries/s from the commit until the last event is recorded as delivered.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO
from uuid import UUID

from tools.bench.cleanup import purge_queues
from tools.bench.core import BenchContext, Result, benchmark, with_ratios
from tools.bench.server import BASE_DIR, SETTINGS_MODULE, ServerError, stop_process_group

WORKER_EVENTS = 1500
WORKER_COUNTS = (1, 2)
READY_TIMEOUT_S = 60.0
DELIVERY_TIMEOUT_S = 180.0


@benchmark
def webhook_workers(ctx: BenchContext) -> list[Result]:
    from django.conf import settings

    from payments.models import Company
    from payments.services import company_set_webhook_url, company_signing_secret
    from webhooks.models import WebhookEvent
    from webhooks.receiver import WebhookReceiver

    if not str(settings.CELERY_BROKER_URL).startswith("redis"):
        # The filesystem broker of the embedded default is one machine's folder: nothing to scale across.
        return [Result("webhook workers (needs REDIS_URL)", None)]
    company = Company.objects.get(pk=ctx.company_id)
    # The events the HTTP rows left pending (their webhook URL is a closed port): the dispatcher would send
    # them with this run's events and measure them too. Recorded as skipped, as with no URL set.
    WebhookEvent.objects.filter(company=company, status=WebhookEvent.Status.PENDING).update(
        status=WebhookEvent.Status.SKIPPED, next_attempt_at=None, lease_token=None, lease_expires_at=None
    )
    results = []
    with WebhookReceiver(secret=company_signing_secret(company), keep_alive=True) as receiver:
        company_set_webhook_url(company_id=company.pk, url=receiver.url)
        try:
            for count in WORKER_COUNTS:
                log_path = Path(ctx.workdir) / f"workers-{count}.log"
                try:
                    with log_path.open("w") as log, _workers(count, log):
                        rate, failures = _deliver_all(company.pk)
                except ServerError as exc:
                    rate, failures = None, [str(exc)]
                if failures:
                    failures.append(f"worker log: {log_path.read_text(errors='replace')[-1500:]}")
                name = f"webhook deliveries, {count} worker process{'es' if count > 1 else ''}"
                results.append(Result(name, rate, failures=failures[:5]))
        finally:
            company_set_webhook_url(company_id=company.pk, url="")
        bad = sum(1 for got in receiver.received if got.verified is False)
    if bad:
        results[-1].failures.append(f"{bad} webhooks failed signature verification at the receiver")
    return with_ratios(results, baseline=results[0].name)


def _deliver_all(company_id: UUID) -> tuple[float | None, list[str]]:
    """Publish WORKER_EVENTS events (one object each, so none waits for another) and wait until every one
    is delivered; deliveries/s from the commit on."""
    from django.db import transaction

    from invoices.events import invoice_body
    from payments.models import Company
    from webhooks.models import WebhookEvent
    from webhooks.services import webhook_publish

    company = Company.objects.get(pk=company_id)
    run = time.time_ns()
    with transaction.atomic():
        ids = [
            webhook_publish(
                company=company,
                family=WebhookEvent.Family.INVOICE,
                object_id=f"w-{run}-{index}",
                body=invoice_body(invoice_id=f"w-{run}-{index}", status="created"),
            ).pk
            for index in range(WORKER_EVENTS)
        ]
        t0 = time.perf_counter()  # the messages leave on commit, right after this block
    deadline = t0 + DELIVERY_TIMEOUT_S
    delivered = 0
    while time.perf_counter() < deadline:
        delivered = WebhookEvent.objects.filter(pk__in=ids, status=WebhookEvent.Status.DELIVERED).count()
        if delivered == WORKER_EVENTS:
            return WORKER_EVENTS / (time.perf_counter() - t0), []
        time.sleep(0.05)  # polling the outcome, not ordering anything
    return None, [f"{delivered} of {WORKER_EVENTS} delivered within {DELIVERY_TIMEOUT_S:.0f}s"]


@contextmanager
def _workers(count: int, log: IO[str], *, concurrency: int = 1) -> Iterator[None]:
    """`count` webhook workers of `concurrency` processes each (one unless told), ready to consume before
    the block runs."""
    from config.celery import app

    # What earlier kinds left in the queue (the HTTP rows create invoices and withdrawals while a webhook URL
    # is set) would be delivered first and measured instead of this run's events.
    purge_queues(["webhooks"])
    names = [f"bench-hooks-{index}-{os.getpid()}@localhost" for index in range(count)]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS_MODULE, "PYTHONUNBUFFERED": "1"}
    processes = [
        subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            [
                sys.executable,
                *("-m", "celery", "-A", "config", "worker", "--queues", "webhooks"),
                *("--concurrency", str(concurrency), "--hostname", name, "--loglevel", "WARNING"),
                *("--without-gossip", "--without-mingle"),
            ],
            cwd=BASE_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for name in names
    ]
    try:
        _wait_until_ready(app, names, processes)
        yield
    finally:
        for process in processes:
            stop_process_group(process)


def _wait_until_ready(app: object, names: list[str], processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            raise ServerError("a bench webhook worker exited during start-up (see its log)")
        answered = app.control.ping(destination=names, timeout=1.0)  # type: ignore[attr-defined]
        if {name for reply in answered for name in reply} >= set(names):
            return
    raise ServerError(f"bench webhook workers not ready within {READY_TIMEOUT_S:.0f}s")
