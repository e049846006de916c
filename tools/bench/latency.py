"""How long a webhook takes from the commit of its event to its arrival at the receiver, idle and under load.

A real webhook worker (`celery -A config worker --queues webhooks`, the production command with the host's
default concurrency) on the bench's PostgreSQL and Redis delivers to a local receiver that keeps connections
alive. The bench publishes `LATENCY_OBJECTS` invoices' worth of events, three per invoice (`created`,
`pending`, `processing`), each in its own commit as state changes write them, the three of an invoice back
to back so that each waits for the one before it (docs/api.md, Order); a new invoice every
`LATENCY_OBJECT_GAP_S`. A webhook's latency is its first arrival minus the moment before its commit. The
rows are the p50 and p99 of those latencies, first on an idle instance, then while wrk drives `POST invoice`
(the bench's HTTP load: 32 connections) for another merchant, whose events are recorded as skipped so that
the load is the API's, not more webhooks. A p99 over its target (`tools.bench.targets.LATENCY_TARGETS_S`)
misses the row's target.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tools.bench import wrk
from tools.bench.core import BenchContext, Result, benchmark
from tools.bench.endpoints import ENDPOINTS
from tools.bench.server import ServerError
from tools.bench.workers import _workers

if TYPE_CHECKING:
    from payments.models import Company
    from webhooks.receiver import WebhookReceiver

LATENCY_OBJECTS = 40
LATENCY_STATUSES = ("created", "pending", "processing")
LATENCY_OBJECT_GAP_S = 0.25
LATENCY_WAIT_S = 60.0  # after the last commit, for the last arrivals
IDLE, LOADED = "idle", "under load"
LOAD_ENDPOINT = "POST invoice"


def latency_row_name(phase: str) -> str:
    return f"webhook commit to delivery, {phase}"


@benchmark
def webhook_latency(ctx: BenchContext) -> list[Result]:
    from django.conf import settings

    from payments.models import Company
    from payments.services import company_set_webhook_url, company_signing_secret
    from webhooks.models import WebhookEvent
    from webhooks.receiver import WebhookReceiver

    if not str(settings.CELERY_BROKER_URL).startswith("redis"):
        return [Result("webhook commit to delivery (needs REDIS_URL)", None)]
    company = Company.objects.get(pk=ctx.company_id)
    # What the HTTP rows left pending (their webhook URL is a closed port) would be delivered first.
    WebhookEvent.objects.filter(company=company, status=WebhookEvent.Status.PENDING).update(
        status=WebhookEvent.Status.SKIPPED, next_attempt_at=None, lease_token=None, lease_expires_at=None
    )
    load = _load(ctx)
    log_path = Path(ctx.workdir) / "latency-worker.log"
    results: list[Result] = []
    with WebhookReceiver(secret=company_signing_secret(company), keep_alive=True) as receiver:
        company_set_webhook_url(company_id=company.pk, url=receiver.url)
        company.refresh_from_db()  # its URL decides whether an event is to be delivered
        try:
            with log_path.open("w") as log, _workers(1, log, concurrency=os.cpu_count() or 1):
                for phase, during in ((IDLE, None), (LOADED, load)):
                    committed, arrived, load_failures = _publish_and_collect(company, receiver, phase, during)
                    results.append(latency_result(phase, committed, arrived))
                    results[-1].failures += load_failures
        except ServerError as exc:
            results.append(Result(latency_row_name(IDLE), None, failures=[str(exc)]))
        finally:
            company_set_webhook_url(company_id=company.pk, url="")
    for result in results:
        if any("not received" in failure for failure in result.failures):  # the worker's story, if it has one
            result.failures.append(f"worker log: {log_path.read_text(errors='replace')[-1500:]}")
    return results


def _load(ctx: BenchContext) -> Callable[[float], list[str]]:
    """wrk driving `POST invoice` for `seconds`, as a second merchant with no webhook URL (its invoices'
    events are recorded as skipped), with the HTTP rows' wrk settings."""
    from tools.bench.server import create_merchant

    _, token = create_merchant()
    endpoint = next(e for e in ENDPOINTS if e.name == LOAD_ENDPOINT)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    script = wrk.write_script(
        Path(ctx.workdir) / "latency-load.lua",
        method=endpoint.method,
        body=json.dumps(endpoint.body),
        headers=headers,
    )
    wrk_path = wrk.ensure_wrk()

    def run(seconds: float) -> list[str]:
        """The load's failures (wrk's errors, non-2xx answers): then the phase was not under load."""
        url = ctx.base_url + endpoint.path
        try:
            report = wrk.run(wrk_path, url, script, ctx.wrk, duration_s=max(1, round(seconds)))
        except wrk.WrkError as exc:
            return [f"the load: {exc}"]
        return [f"the load: {failure}" for failure in report.failures()]

    return run


def _publish_and_collect(
    company: Company,
    receiver: WebhookReceiver,
    phase: str,
    load: Callable[[float], list[str]] | None,
) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """Publish the phase's events (while `load` runs, if given) and wait for them: (the moment before each
    commit, each first arrival), by `webhook-id`, and the load's failures."""
    from invoices.events import invoice_body
    from webhooks.models import WebhookEvent
    from webhooks.services import webhook_publish

    publishing_s = LATENCY_OBJECTS * LATENCY_OBJECT_GAP_S
    loader, load_failures = None, []
    if load is not None:
        # Running for the publishing and the last deliveries, a second first so the load is on at the start.
        loader = threading.Thread(target=lambda: load_failures.extend(load(publishing_s + 4)), daemon=True)
        loader.start()
        time.sleep(1.0)  # pacing: the load is established before the first event, nothing is ordered by it
    run = f"{phase[:4]}-{time.time_ns()}"
    committed: dict[str, float] = {}
    for index in range(LATENCY_OBJECTS):
        object_id = f"lat-{run}-{index}"
        for status in LATENCY_STATUSES:
            before = time.time()
            # Autocommit: the event commits in this call and its wake-up is sent before it returns.
            event = webhook_publish(
                company=company,
                family=WebhookEvent.Family.INVOICE,
                object_id=object_id,
                body=invoice_body(invoice_id=object_id, status=status),
            )
            committed[str(event.pk)] = before
        time.sleep(LATENCY_OBJECT_GAP_S)  # pacing the publisher: a new invoice every gap, as traffic comes
    deadline = time.monotonic() + LATENCY_WAIT_S
    arrived = _arrivals(receiver, committed)
    while len(arrived) < len(committed) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling the outcome, not ordering anything
        arrived = _arrivals(receiver, committed)
    if loader is not None:
        loader.join()
    return committed, arrived, load_failures


def _arrivals(receiver: WebhookReceiver, committed: Mapping[str, float]) -> dict[str, float]:
    arrived: dict[str, float] = {}
    for got in list(receiver.received):
        webhook_id = got.headers.get("webhook-id", "")
        if webhook_id in committed and webhook_id not in arrived:
            arrived[webhook_id] = got.at
    return arrived


def latency_result(phase: str, committed: Mapping[str, float], arrived: Mapping[str, float]) -> Result:
    """The phase's row: webhooks delivered per second over the phase, the p50 and p99 of commit to first
    arrival (ms); failed when a webhook never arrived. Its target, a p99 at most the phase's
    target (`tools.bench.targets.LATENCY_TARGETS_S`), is judged with every other row's."""
    name = latency_row_name(phase)
    latencies = sorted(arrived[key] - committed[key] for key in committed if key in arrived)
    failures = []
    if len(latencies) < len(committed):
        missing = len(committed) - len(latencies)
        failures.append(f"{missing} of {len(committed)} webhooks not received within {LATENCY_WAIT_S:g} s")
    if not latencies:
        return Result(name, None, failures=failures or ["no webhook published"])
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    span = max(arrived[key] for key in committed if key in arrived) - min(committed.values())
    rate = len(latencies) / span if span > 0 else None
    return Result(name, rate, p50_ms=p50 * 1000, p99_ms=p99 * 1000, failures=failures)
