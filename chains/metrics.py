"""The chains' gauges on /metrics: each code's scan as its cursor stored it, and what a reorganisation took
back (chains.settled), read from the database once per scrape (registered by ChainsConfig)."""

from __future__ import annotations

from datetime import datetime

from prometheus_client.metrics_core import Metric

from chains.models import ChainCursor
from chains.settled import reversed_counts
from chains.unrouted import open_final
from core.metrics import gauge


def chain_gauges(now: datetime) -> list[Metric]:
    tip = gauge("kassa_chain_tip_height", "The chain's tip as the last completed scan saw it", ["code"])
    lag = gauge(
        "kassa_chain_scan_lag_blocks", "Blocks between that tip and where the scan's cursor stands", ["code"]
    )
    age = gauge("kassa_chain_scan_age_seconds", "Seconds since the last completed scan", ["code"])
    paused = gauge("kassa_chain_paused", "1 while ingestion is paused: the node cannot be reached", ["code"])
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
    return [tip, lag, age, paused, *_reversed(codes), _unrouted(codes)]


def _unrouted(codes: list[str]) -> Metric:
    """Final deposits nobody owns, open for a person (chains.unrouted), 0 for every scanned code."""
    waiting = open_final()
    unrouted = gauge(
        "kassa_unrouted_deposits",
        "Confirmed deposits no invoice or address owns, waiting for a person to assign, refund or keep them",
        ["code"],
    )
    for code in sorted({*codes, *waiting}):
        unrouted.add_metric([code], waiting.get(code, 0))
    return unrouted


def _reversed(codes: list[str]) -> list[Metric]:
    """What a reorganisation deeper than the confirmations took back (chains.settled), 0 for every scanned
    code so an alerting rule sees the series before the first one."""
    counts = reversed_counts()
    payouts = gauge(
        "kassa_chain_reversed_payouts",
        "Confirmed payouts no longer on the chain after a reorganisation (re-sent until mined again)",
        ["code"],
    )
    deposits = gauge(
        "kassa_chain_reversed_deposits",
        "Credited deposits no longer on the chain after a reorganisation (a person decides)",
        ["code"],
    )
    for family, name in ((payouts, "payouts"), (deposits, "deposits")):
        for code in sorted({*codes, *counts[name]}):
            family.add_metric([code], counts[name].get(code, 0))
    return [payouts, deposits]
