"""The invoices' gauges on /metrics, read from the database once per scrape (registered by InvoicesConfig)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count
from prometheus_client.metrics_core import Metric

from core.metrics import gauge
from invoices.models import Invoice

# The statuses an invoice leaves: counting the final ones would read every invoice ever made.
OPEN_INVOICE_STATUSES = (Invoice.Status.CREATED, Invoice.Status.PENDING, Invoice.Status.PROCESSING)


def invoice_gauges(now: datetime) -> list[Metric]:
    counts = dict.fromkeys(OPEN_INVOICE_STATUSES, 0)
    rows = (
        Invoice.objects.filter(status__in=OPEN_INVOICE_STATUSES).values_list("status").annotate(n=Count("pk"))
    )
    counts.update(dict(rows))
    family = gauge("kassa_invoices", "Invoices in an open status (created, pending, processing)", ["status"])
    for status, count in counts.items():
        family.add_metric([status], count)
    return [family]
