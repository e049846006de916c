"""The webhook outbox's gauges on /metrics, read from the database once per scrape (registered by
WebhooksConfig)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Min
from prometheus_client.metrics_core import Metric

from core.metrics import gauge
from webhooks.models import WebhookEvent


def outbox_gauges(now: datetime) -> list[Metric]:
    pending = WebhookEvent.objects.filter(status=WebhookEvent.Status.PENDING)
    due = pending.filter(next_attempt_at__lte=now).aggregate(count=Count("pk"), oldest=Min("next_attempt_at"))
    depth = gauge("kassa_webhook_outbox_pending", "Webhook events waiting for delivery (due now or later)")
    depth.add_metric([], pending.count())
    due_family = gauge("kassa_webhook_outbox_due", "Webhook events due for delivery now")
    due_family.add_metric([], due["count"])
    oldest = gauge(
        "kassa_webhook_outbox_oldest_due_age_seconds",
        "How long the oldest due webhook event has waited (0: none)",
    )
    oldest.add_metric([], max((now - due["oldest"]).total_seconds(), 0.0) if due["oldest"] else 0.0)
    return [depth, due_family, oldest]
