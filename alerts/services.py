"""Raise and resolve operator alerts. Each raise is also logged at ERROR, so a log watcher sees it too."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from alerts.models import Alert, AlertStatus

logger = logging.getLogger("kassa.alerts")


def alert_raise(*, kind: str, key: str, message: str) -> Alert:
    """Open the alert, or count it again while it is open (one row per open (kind, key))."""
    now = timezone.now()
    logger.error("ALERT %s %s: %s", kind, key, message)
    for _ in range(2):  # a concurrent first raise wins the insert; ours then counts on its row
        updated = Alert.objects.filter(kind=kind, key=key, status=AlertStatus.OPEN).update(
            count=F("count") + 1, message=message, last_raised_at=now
        )
        if updated:
            return Alert.objects.get(kind=kind, key=key, status=AlertStatus.OPEN)
        try:
            with transaction.atomic():
                return Alert.objects.create(kind=kind, key=key, message=message, last_raised_at=now)
        except IntegrityError:
            continue
    return Alert.objects.get(kind=kind, key=key, status=AlertStatus.OPEN)


def alert_resolve(*, kind: str, key: str) -> int:
    """Close the open alert, if any; returns how many were closed (0 or 1)."""
    closed = Alert.objects.filter(kind=kind, key=key, status=AlertStatus.OPEN).update(
        status=AlertStatus.RESOLVED, resolved_at=timezone.now()
    )
    if closed:
        logger.info("alert resolved: %s %s", kind, key)
    return closed


def open_alerts(*, about: str = "") -> list[Alert]:
    """Open alerts, oldest first; with `about` (a payment code) those whose key is it or "<about>:..."."""
    alerts = Alert.objects.filter(status=AlertStatus.OPEN)
    if about:
        alerts = alerts.filter(Q(key=about) | Q(key__startswith=f"{about}:"))
    return list(alerts.order_by("raised_at"))
