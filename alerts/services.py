"""The alert lifecycle: one function per transition. Each raise is also logged at ERROR, so a log watcher
sees it too.

`grep "^def alert_" alerts/services.py` lists it:

    (none, or the last one resolved) --alert_raise--> open (raised): a new row, and its channels are told
    open | acknowledged --alert_raise--> the same status: counted, message refreshed, nobody told again
    open --alert_acknowledge--> acknowledged                  (a person: the staff page, manage.py alerts)
    open | acknowledged --alert_resolve--> resolved            (the code saw the condition gone)
    open | acknowledged --alert_resolve_by_person--> resolved  (a person)

While open (raised or acknowledged) there is one row per (kind, key): a database constraint says so. A
resolved row stays as history; the next raise of its (kind, key) opens a new row, told anew.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from alerts.models import OPEN_STATUSES, Alert, AlertNotification, AlertStatus
from alerts.outbox import notifications_write
from core.errors import InvalidState, NotFound

logger = logging.getLogger("kassa.alerts")

Status = AlertStatus

TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "acknowledge": (frozenset({Status.OPEN}), Status.ACKNOWLEDGED),
    "resolve": (frozenset(OPEN_STATUSES), Status.RESOLVED),
}


def _now() -> datetime:
    return timezone.now()


def _guard(alert: Alert, name: str) -> str:
    """The target of transition `name`, or InvalidState when the table does not allow it from here."""
    sources, target = TRANSITIONS[name]
    if alert.status not in sources:
        raise InvalidState(f"Cannot {name} an alert that is {alert.status}.")
    return target


def _open(kind: str, key: str) -> Q:
    return Q(kind=kind, key=key, status__in=OPEN_STATUSES)


def alert_raise(*, kind: str, key: str, message: str) -> Alert:
    """Open the alert and tell its channels (after commit), or count it again while it is open: then nobody
    is told again, whether it is raised or acknowledged."""
    now = _now()
    logger.error("ALERT %s %s: %s", kind, key, message)
    for _ in range(2):  # a concurrent first raise wins the insert; ours then counts on its row
        updated = Alert.objects.filter(_open(kind, key)).update(
            count=F("count") + 1, message=message, last_raised_at=now
        )
        if updated:
            counted = Alert.objects.filter(_open(kind, key)).first()
            if counted is not None:
                return counted
            continue  # resolved in between: this raise opens it anew
        try:
            with transaction.atomic():
                alert = Alert.objects.create(kind=kind, key=key, message=message, last_raised_at=now)
                notifications_write(alert, AlertNotification.Event.OPENED)
                return alert
        except IntegrityError:
            continue
    return Alert.objects.get(_open(kind, key))


@transaction.atomic
def alert_acknowledge(*, alert_id: int, by: str) -> Alert:
    """A person looks at it: who and when are kept; raising it again no longer tells anyone."""
    alert = _locked(alert_id)
    if alert.status == Status.ACKNOWLEDGED:
        return alert  # two people pressed the button: the first one keeps the credit
    alert.status = _guard(alert, "acknowledge")
    alert.acknowledged_at = _now()
    alert.acknowledged_by = by[:254]
    alert.save(update_fields=["status", "acknowledged_at", "acknowledged_by"])
    logger.info("alert acknowledged by %s: %s %s", alert.acknowledged_by, alert.kind, alert.key)
    return alert


def alert_resolve(*, kind: str, key: str) -> int:
    """The code saw the condition gone: close the open alert, if any; returns how many closed (0 or 1)."""
    with transaction.atomic():
        alert = Alert.objects.select_for_update().filter(_open(kind, key)).first()
        if alert is None:
            return 0
        _resolve(alert, by="")
    return 1


@transaction.atomic
def alert_resolve_by_person(*, alert_id: int, by: str) -> Alert:
    """A person closes it (the condition is handled, or was not one); raised again later, it opens anew."""
    alert = _locked(alert_id)
    if alert.status == Status.RESOLVED:
        return alert  # resolved meanwhile, by the code or by someone else
    _resolve(alert, by=by[:254] or "a person")
    return alert


def _locked(alert_id: int) -> Alert:
    alert = Alert.objects.select_for_update().filter(pk=alert_id).first()
    if alert is None:
        raise NotFound("No such alert.")
    return alert


def _resolve(alert: Alert, *, by: str) -> None:
    alert.status = _guard(alert, "resolve")
    alert.resolved_at = _now()
    alert.resolved_by = by
    alert.save(update_fields=["status", "resolved_at", "resolved_by"])
    notifications_write(alert, AlertNotification.Event.RESOLVED)
    logger.info("alert resolved%s: %s %s", f" by {by}" if by else "", alert.kind, alert.key)


def open_alerts(*, about: str = "") -> list[Alert]:
    """Open alerts (raised or acknowledged), oldest first; with `about` (a payment code) those whose key is
    it or "<about>:..."."""
    alerts = Alert.objects.filter(status__in=OPEN_STATUSES)
    if about:
        alerts = alerts.filter(Q(key=about) | Q(key__startswith=f"{about}:"))
    return list(alerts.order_by("raised_at", "pk"))
