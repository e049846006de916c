"""Reads of the alerts for the staff page and the command line."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from alerts.models import OPEN_STATUSES, Alert, AlertNotification, AlertStatus

RECENT_DAYS = 7
RECENT_LIMIT = 50


def _with_notifications(alerts: QuerySet[Alert]) -> QuerySet[Alert]:
    return alerts.prefetch_related(
        Prefetch("notifications", queryset=AlertNotification.objects.order_by("created_at", "channel"))
    )


def alert_list_open() -> list[Alert]:
    """Open alerts (raised or acknowledged), newest first."""
    alerts = Alert.objects.filter(status__in=OPEN_STATUSES).order_by("-raised_at", "-pk")
    return list(_with_notifications(alerts))


def alert_list_recent(*, days: int = RECENT_DAYS, limit: int = RECENT_LIMIT) -> list[Alert]:
    """Alerts resolved in the last `days`, last resolved first."""
    since = timezone.now() - timedelta(days=days)
    alerts = Alert.objects.filter(status=AlertStatus.RESOLVED, resolved_at__gte=since)
    return list(_with_notifications(alerts.order_by("-resolved_at", "-pk"))[:limit])
