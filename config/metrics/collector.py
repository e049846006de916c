"""Gauges read from the database (and the broker) when `/metrics` is scraped, once per scrape.

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
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from django.conf import settings
from django.db.models import Count, Min, Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from alerts.models import OPEN_STATUSES, Alert
from chains.models import ChainCursor, PayoutWallet
from chains.settled import reversed_counts
from core.fields import MoneySum
from invoices.models import Invoice
from webhooks.models import WebhookEvent
from withdrawals.models import Withdrawal

logger = logging.getLogger(__name__)

# The statuses an invoice leaves: counting the final ones would read every invoice ever made.
OPEN_INVOICE_STATUSES = (Invoice.Status.CREATED, Invoice.Status.PENDING, Invoice.Status.PROCESSING)


def _now() -> datetime:
    return timezone.now()


class DatabaseCollector:
    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "kassa_metrics_part_up", "1 when this part of the scrape could be read", labels=["part"]
        )
        parts: list[tuple[str, Callable[[], list[Metric]]]] = [
            ("invoices", _invoices),
            ("payouts", _payouts),
            ("outbox", _outbox),
            ("chains", _chains),
            ("alerts", _alerts),
            ("queues", _queues),
        ]
        for name, part in parts:
            try:
                families = part()
            except Exception:  # a scrape must answer whatever one part raises; the part shows as down
                logger.warning("metrics: the %s part could not be read", name, exc_info=True)
                up.add_metric([name], 0)
                continue
            up.add_metric([name], 1)
            yield from families
        yield up


def _gauge(name: str, documentation: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels or [])


def _invoices() -> list[Metric]:
    counts = dict.fromkeys(OPEN_INVOICE_STATUSES, 0)
    rows = (
        Invoice.objects.filter(status__in=OPEN_INVOICE_STATUSES).values_list("status").annotate(n=Count("pk"))
    )
    counts.update(dict(rows))
    family = _gauge("kassa_invoices", "Invoices in an open status (created, pending, processing)", ["status"])
    for status, count in counts.items():
        family.add_metric([status], count)
    return [family]


def _payouts() -> list[Metric]:
    now = _now()
    cutoff = now - timedelta(seconds=settings.METRICS_PAYOUT_STUCK_SECONDS)
    unsent = Q(txid="")
    # Held by the payout policy (cool-down, a person's approval): waiting as designed, not stuck.
    held = Q(hold_until__gt=now) | Q(approval_required=True, approved_at__isnull=True)
    stuck = (
        ~Q(blocked_reason="")
        | (unsent & ~held & Q(could_go_at__lt=cutoff))
        | (~unsent & Q(broadcast_at__lt=cutoff))
    )
    rows = (
        Withdrawal.objects.filter(status=Withdrawal.Status.PROCESSING)
        .alias(
            # When it could first be sent: accepted, then after its cool-down and its approval.
            could_go_at=Greatest(
                "created_at", Coalesce("hold_until", "created_at"), Coalesce("approved_at", "created_at")
            )
        )
        .values("code")
        .annotate(
            pending=Count("pk", filter=unsent),
            broadcast=Count("pk", filter=~unsent),
            stuck=Count("pk", filter=stuck),
            pending_amount=MoneySum("amount", filter=unsent),
        )
    )
    short = set(
        Alert.objects.filter(status__in=OPEN_STATUSES, kind="payout_wallet_short").values_list(
            "key", flat=True
        )
    )
    pending = _gauge("kassa_payouts_pending", "Withdrawals accepted and not yet broadcast", ["code"])
    broadcast = _gauge("kassa_payouts_broadcast", "Withdrawals broadcast and not yet confirmed", ["code"])
    stuck_family = _gauge(
        "kassa_payouts_stuck",
        "Processing withdrawals blocked for a reason, or unsent or unconfirmed for longer than "
        "METRICS_PAYOUT_STUCK_SECONDS",
        ["code"],
    )
    amount = _gauge(
        "kassa_payouts_pending_amount",
        "What the hot wallet must still pay out: sum of unsent withdrawals",
        ["code"],
    )
    wallet_short = _gauge(
        "kassa_payout_wallet_short",
        "1 while the payout pipeline finds the hot wallet short (open alert)",
        ["code"],
    )
    codes = set(short)
    families = [pending, broadcast, stuck_family, amount, wallet_short, *_wallets(now)]
    for row in rows:
        code = row["code"]
        codes.add(code)
        pending.add_metric([code], row["pending"])
        broadcast.add_metric([code], row["broadcast"])
        stuck_family.add_metric([code], row["stuck"])
        amount.add_metric(
            [code], float(row["pending_amount"] or 0)
        )  # a gauge is a float; money stays Decimal
    for code in sorted(codes):
        wallet_short.add_metric([code], 1 if code in short else 0)
    return families


def _wallets(now: datetime) -> list[Metric]:
    balance = _gauge(
        "kassa_payout_wallet_balance",
        "What the hot wallet can spend, as the payout monitor last read it from the node",
        ["code"],
    )
    gas = _gauge(
        "kassa_payout_wallet_gas",
        "Account chains: the hot address's native coin, which pays the gas",
        ["code"],
    )
    age = _gauge("kassa_payout_wallet_read_age_seconds", "Seconds since that reading", ["code"])
    for wallet in PayoutWallet.objects.order_by("code"):
        balance.add_metric([wallet.code], float(wallet.balance))  # a gauge is a float; money stays Decimal
        if wallet.gas_tank is not None:
            gas.add_metric([wallet.code], float(wallet.gas_tank))
        age.add_metric([wallet.code], max((now - wallet.read_at).total_seconds(), 0.0))
    return [balance, gas, age]


def _outbox() -> list[Metric]:
    now = _now()
    pending = WebhookEvent.objects.filter(status=WebhookEvent.Status.PENDING)
    due = pending.filter(next_attempt_at__lte=now).aggregate(count=Count("pk"), oldest=Min("next_attempt_at"))
    depth = _gauge("kassa_webhook_outbox_pending", "Webhook events waiting for delivery (due now or later)")
    depth.add_metric([], pending.count())
    due_family = _gauge("kassa_webhook_outbox_due", "Webhook events due for delivery now")
    due_family.add_metric([], due["count"])
    oldest = _gauge(
        "kassa_webhook_outbox_oldest_due_age_seconds",
        "How long the oldest due webhook event has waited (0: none)",
    )
    oldest.add_metric([], max((now - due["oldest"]).total_seconds(), 0.0) if due["oldest"] else 0.0)
    return [depth, due_family, oldest]


def _chains() -> list[Metric]:
    now = _now()
    tip = _gauge("kassa_chain_tip_height", "The chain's tip as the last completed scan saw it", ["code"])
    lag = _gauge(
        "kassa_chain_scan_lag_blocks", "Blocks between that tip and where the scan's cursor stands", ["code"]
    )
    age = _gauge("kassa_chain_scan_age_seconds", "Seconds since the last completed scan", ["code"])
    paused = _gauge("kassa_chain_paused", "1 while ingestion is paused: the node cannot be reached", ["code"])
    codes: list[str] = []
    for row in ChainCursor.objects.order_by("code"):
        codes.append(row.code)
        paused.add_metric([row.code], 1 if row.paused_reason else 0)
        if row.scanned_at is not None:
            age.add_metric([row.code], max((now - row.scanned_at).total_seconds(), 0.0))
        if row.tip_height is None:
            continue
        tip.add_metric([row.code], row.tip_height)
        # Backends that scan block ranges keep their height in the cursor; the others (bitcoincore's
        # listsinceblock) always scan through the tip they report.
        height = row.cursor.get("height") if isinstance(row.cursor, dict) else None
        behind = row.tip_height - height if isinstance(height, int) else 0
        lag.add_metric([row.code], max(behind, 0))
    return [tip, lag, age, paused, *_reversed(codes)]


def _reversed(codes: list[str]) -> list[Metric]:
    """What a reorganisation deeper than the confirmations took back (chains.settled), 0 for every scanned
    code so an alerting rule sees the series before the first one."""
    counts = reversed_counts()
    payouts = _gauge(
        "kassa_chain_reversed_payouts",
        "Confirmed payouts no longer on the chain after a reorganisation (re-sent until mined again)",
        ["code"],
    )
    deposits = _gauge(
        "kassa_chain_reversed_deposits",
        "Credited deposits no longer on the chain after a reorganisation (a person decides)",
        ["code"],
    )
    for family, name in ((payouts, "payouts"), (deposits, "deposits")):
        for code in sorted({*codes, *counts[name]}):
            family.add_metric([code], counts[name].get(code, 0))
    return [payouts, deposits]


def _alerts() -> list[Metric]:
    family = _gauge("kassa_alerts_open", "Open operator alerts by kind", ["kind"])
    rows = Alert.objects.filter(status__in=OPEN_STATUSES).values_list("kind").annotate(n=Count("pk"))
    for kind, count in sorted(rows):
        family.add_metric([kind], count)
    return [family]


def _queues() -> list[Metric]:
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
    family = _gauge("kassa_celery_queue_length", "Messages waiting in each Celery queue (Redis)", ["queue"])
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
