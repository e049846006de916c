"""The payouts' gauges on /metrics: withdrawals waiting, broadcast and stuck per code, and the hot wallet as
the payout monitor last read it, read from the database once per scrape (registered by WithdrawalsConfig)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Q
from django.db.models.functions import Coalesce, Greatest
from prometheus_client.metrics_core import Metric

from alerts.models import OPEN_STATUSES, Alert
from chains.models import PayoutWallet
from core.fields import MoneySum
from core.metrics import gauge
from withdrawals.models import Withdrawal


def payout_gauges(now: datetime) -> list[Metric]:
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
    pending = gauge("kassa_payouts_pending", "Withdrawals accepted and not yet broadcast", ["code"])
    broadcast = gauge("kassa_payouts_broadcast", "Withdrawals broadcast and not yet confirmed", ["code"])
    stuck_family = gauge(
        "kassa_payouts_stuck",
        "Processing withdrawals blocked for a reason, or unsent or unconfirmed for longer than "
        "METRICS_PAYOUT_STUCK_SECONDS",
        ["code"],
    )
    amount = gauge(
        "kassa_payouts_pending_amount",
        "What the hot wallet must still pay out: sum of unsent withdrawals",
        ["code"],
    )
    wallet_short = gauge(
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
    balance = gauge(
        "kassa_payout_wallet_balance",
        "What the hot wallet can spend, as the payout monitor last read it from the node",
        ["code"],
    )
    gas = gauge(
        "kassa_payout_wallet_gas",
        "Account chains: the hot address's native coin, which pays the gas",
        ["code"],
    )
    age = gauge("kassa_payout_wallet_read_age_seconds", "Seconds since that reading", ["code"])
    for wallet in PayoutWallet.objects.order_by("code"):
        balance.add_metric([wallet.code], float(wallet.balance))  # a gauge is a float; money stays Decimal
        if wallet.gas_tank is not None:
            gas.add_metric([wallet.code], float(wallet.gas_tank))
        age.add_metric([wallet.code], max((now - wallet.read_at).total_seconds(), 0.0))
    return [balance, gas, age]
