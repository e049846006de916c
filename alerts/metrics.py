"""The open alerts on /metrics, read from the database once per scrape (registered by AlertsConfig)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count
from prometheus_client.metrics_core import Metric

from alerts.models import OPEN_STATUSES, Alert
from core.metrics import gauge


def alert_gauges(now: datetime) -> list[Metric]:
    family = gauge("kassa_alerts_open", "Open operator alerts by kind", ["kind"])
    rows = Alert.objects.filter(status__in=OPEN_STATUSES).values_list("kind").annotate(n=Count("pk"))
    for kind, count in sorted(rows):
        family.add_metric([kind], count)
    return [family]
