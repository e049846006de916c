"""Prometheus metrics: the counters services bump where things happen (docs/operations.md#operations-metrics).

Each process counts in its own memory, or, with `PROMETHEUS_MULTIPROC_DIR` in the environment, in its own
files in that directory, which the process answering `/metrics` adds up (config.metrics.views). Only
counters and histograms live here: what the database knows (open invoices, the outbox, payouts) is read
once per scrape by config.metrics.collector, never summed over processes.

A counter of something written in a transaction is bumped when that transaction commits: a rolled-back
batch that is ingested again one transfer at a time is counted once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from prometheus_client import Counter, Histogram, disable_created_metrics
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

logger = logging.getLogger(__name__)

# prometheus-client reads this when it is imported: every process of a host must start with the same value.
MULTIPROC_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
if MULTIPROC_DIR:
    os.makedirs(MULTIPROC_DIR, exist_ok=True)  # a missing directory would fail the first count, not the start
# No `*_created` series beside every counter: they double the exposition and no rule here uses them.
disable_created_metrics()

HTTP_REQUESTS = Counter(
    "kassa_http_requests",
    "HTTP requests answered, by URL pattern (route), method and status class",
    ["route", "method", "status"],
)
HTTP_DURATION = Histogram(
    "kassa_http_request_duration_seconds",
    "Time from the first middleware receiving a request to its response, by URL pattern (route)",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
DEPOSITS_SEEN = Counter("kassa_deposits_seen", "Incoming transfers recorded for the first time", ["code"])
DEPOSITS_CONFIRMED = Counter(
    "kassa_deposits_confirmed",
    "Deposits that reached their asset's confirmations (credited to their owner, if any)",
    ["code"],
)
WEBHOOK_ATTEMPTS = Counter(
    "kassa_webhook_attempts",
    "Webhook delivery attempts by outcome: delivered, retry (failed, tried again later), failed (the last "
    "attempt failed), skipped (no webhook URL when it was due)",
    ["outcome"],
)
INVOICES_CREATED = Counter("kassa_invoices_created", "Invoices created")
INVOICE_STATUSES = Counter(
    "kassa_invoice_transitions",
    "Invoices that entered each status (created included): the final statuses, which no gauge counts",
    ["status"],
)
THROTTLE_LOCAL_COUNTS = Counter(
    "kassa_throttle_local_counts",
    "Rate-limit and failure counts this process kept in its own memory because the shared cache (Redis) "
    "could not be reached, by throttle",
    ["throttle"],
)

WEBHOOK_OUTCOMES = frozenset({"delivered", "retry", "failed", "skipped"})


def deposits_seen(code: str, count: int = 1) -> None:
    _on_commit(count, DEPOSITS_SEEN.labels(code=code))


def deposits_confirmed(code: str, count: int = 1) -> None:
    _on_commit(count, DEPOSITS_CONFIRMED.labels(code=code))


def invoice_created() -> None:
    _on_commit(1, INVOICES_CREATED, INVOICE_STATUSES.labels(status="created"))


def invoice_status(status: str, count: int = 1) -> None:
    """`count` invoices entered `status` (a transition of invoices.services) in the current transaction."""
    _on_commit(count, INVOICE_STATUSES.labels(status=status))


def webhook_attempt(outcome: str) -> None:
    if outcome not in WEBHOOK_OUTCOMES:
        raise ValueError(f"unknown webhook outcome {outcome!r}")
    _on_commit(1, WEBHOOK_ATTEMPTS.labels(outcome=outcome))


def throttle_counted_locally(throttle: str) -> None:
    """A throttle counted one event in this process's memory: the shared cache failed (core.throttle)."""
    _count((THROTTLE_LOCAL_COUNTS.labels(throttle=throttle),), 1)


def _on_commit(amount: int, *counters: Any) -> None:
    """Each counter `inc(amount)` once the current transaction commits (at once outside one): one callback."""
    if amount:
        transaction.on_commit(lambda: _count(counters, amount))


def _count(counters: tuple[Any, ...], amount: int) -> None:
    try:
        for counter in counters:
            counter.inc(amount)
    except OSError:
        # A full disk or a removed PROMETHEUS_MULTIPROC_DIR loses a count, never the work that was done.
        logger.warning("a metric could not be counted (PROMETHEUS_MULTIPROC_DIR?)", exc_info=True)


# --- gauges read when /metrics is scraped -------------------------------------------------------------------

ScrapePart = Callable[[datetime], list[Metric]]
_scrape_parts: dict[str, ScrapePart] = {}


def register_scrape_part(name: str, part: ScrapePart) -> None:
    """An app's gauges, read from the database on each scrape with the scrape's `now` (the collector of
    config.metrics calls each; one that raises shows as `kassa_metrics_part_up{part=name} 0`). Registered
    by the app's AppConfig.ready; registering a name again replaces it."""
    _scrape_parts[name] = part


def scrape_parts() -> list[tuple[str, ScrapePart]]:
    return list(_scrape_parts.items())


def gauge(name: str, documentation: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels or [])
