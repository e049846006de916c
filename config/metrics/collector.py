"""Gauges read from the database (and the broker) when `/metrics` is scraped, once per scrape: each app's own
(`<app>/metrics.py`, registered with core.metrics when the app starts) and the broker's queues.

Every query is small and served by an index: open invoices by status (`invoice_expiry_idx`), processing
payouts (`withdrawal_open_idx`), pending webhook events (`webhook_due_idx`), open alerts, the scan cursors
(a row per code). No chain node is called: scan lag is what the scanner stored with its cursor, and the
hot wallet's balance is what beat's payout monitor last read (chains.wallets), shown beside the
withdrawals waiting for it and whether the payout pipeline found it short (its open `payout_wallet_short`
alert).
Payouts and credited deposits a reorganisation took back are counted on their partial indexes.

A part that fails (the database or Redis down) is left out and `kassa_metrics_part_up{part}` says 0;
the scrape itself still answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import cache
from typing import Any

from django.conf import settings
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from core.metrics import gauge, scrape_parts

logger = logging.getLogger(__name__)


def _now() -> datetime:
    return timezone.now()


class DatabaseCollector:
    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "kassa_metrics_part_up", "1 when this part of the scrape could be read", labels=["part"]
        )
        now = _now()
        # Each app's gauges, as its AppConfig registered them (core.metrics), then the broker's queues.
        parts: list[tuple[str, Callable[[datetime], list[Metric]]]] = [*scrape_parts(), ("queues", _queues)]
        for name, part in parts:
            try:
                families = part(now)
            except Exception:  # a scrape must answer whatever one part raises; the part shows as down
                logger.warning("metrics: the %s part could not be read", name, exc_info=True)
                up.add_metric([name], 0)
                continue
            up.add_metric([name], 1)
            yield from families
        yield up


def _queues(now: datetime) -> list[Metric]:
    broker = str(settings.CELERY_BROKER_URL)
    if not broker.startswith(("redis://", "rediss://", "unix://")):
        return []  # the filesystem and memory brokers of development and tests: nothing to read cheaply
    client = _redis(broker)
    names = list(settings.CELERY_TASK_QUEUE_NAMES)
    with client.pipeline(transaction=False) as pipe:
        for name in names:
            for key in _priority_keys(name):
                pipe.llen(key)
        lengths = pipe.execute()
    family = gauge("kassa_celery_queue_length", "Messages waiting in each Celery queue (Redis)", ["queue"])
    per_queue = len(_priority_keys(""))
    for index, name in enumerate(names):
        family.add_metric([name], sum(lengths[index * per_queue : (index + 1) * per_queue]))
    return [family]


def _priority_keys(queue: str) -> list[str]:
    """The Redis lists kombu keeps a queue in: the queue's name, and one per priority step above 0."""
    return [queue, *(f"{queue}\x06\x16{step}" for step in (3, 6, 9))]


@cache
def _redis(url: str) -> Any:
    import redis

    # Short timeouts: a Redis that hangs makes this part fail within a second, never the scrape hang.
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
