from __future__ import annotations

import pytest

from alerts.models import Alert, AlertNotification, AlertStatus
from alerts.services import (
    TRANSITIONS,
    alert_acknowledge,
    alert_raise,
    alert_resolve,
    alert_resolve_by_person,
    open_alerts,
)
from core.errors import InvalidState, NotFound

pytestmark = pytest.mark.django_db


def test_the_transition_table_is_the_lifecycle():
    assert {
        "acknowledge": (frozenset({"open"}), "acknowledged"),
        "resolve": (frozenset({"open", "acknowledged"}), "resolved"),
    } == TRANSITIONS


@pytest.mark.parametrize(
    ("start", "transition", "allowed"),
    [
        ("open", "acknowledge", True),
        ("acknowledged", "acknowledge", True),  # already there: a no-op, the first person keeps the credit
        ("resolved", "acknowledge", False),
        ("open", "resolve", True),
        ("acknowledged", "resolve", True),
        ("resolved", "resolve", True),  # already there: a no-op
    ],
)
def test_each_person_transition_follows_the_table(start, transition, allowed):
    alert = alert_raise(kind="node_down", key="ltc", message="m")
    Alert.objects.filter(pk=alert.pk).update(status=start)
    change = alert_acknowledge if transition == "acknowledge" else alert_resolve_by_person

    if allowed:
        change(alert_id=alert.pk, by="ops@kassa.test")
        alert.refresh_from_db()
        assert alert.status == TRANSITIONS[transition][1]
    else:
        with pytest.raises(InvalidState, match="Cannot acknowledge an alert that is resolved"):
            change(alert_id=alert.pk, by="ops@kassa.test")
        alert.refresh_from_db()
        assert (alert.status, alert.acknowledged_at, alert.acknowledged_by) == (start, None, "")


def test_a_person_acknowledges_and_resolves_and_who_and_when_are_kept():
    alert = alert_raise(kind="payout_wallet_short", key="btc", message="btc: 2 withdrawal(s) waiting.")

    acknowledged = alert_acknowledge(alert_id=alert.pk, by="ann@kassa.test")
    again = alert_acknowledge(alert_id=alert.pk, by="bob@kassa.test")
    resolved = alert_resolve_by_person(alert_id=alert.pk, by="bob@kassa.test")

    assert (acknowledged.status, acknowledged.acknowledged_by) == (AlertStatus.ACKNOWLEDGED, "ann@kassa.test")
    assert again.acknowledged_by == "ann@kassa.test" and again.acknowledged_at == acknowledged.acknowledged_at
    alert.refresh_from_db()
    assert alert.status == AlertStatus.RESOLVED
    assert (alert.acknowledged_by, alert.resolved_by) == ("ann@kassa.test", "bob@kassa.test")
    assert alert.acknowledged_at <= alert.resolved_at == resolved.resolved_at


def test_a_missing_alert_is_not_found_and_nothing_changes():
    with pytest.raises(NotFound):
        alert_acknowledge(alert_id=404, by="ops")
    with pytest.raises(NotFound):
        alert_resolve_by_person(alert_id=404, by="ops")


def test_raised_twice_is_one_row_counted_twice_and_told_once(
    settings, messages, django_capture_on_commit_callbacks
):
    settings.ALERT_EMAILS = ["ops@kassa.test"]
    settings.ALERT_WEBHOOK_URL = "https://alerts.example.com/hook"

    with django_capture_on_commit_callbacks(execute=True):
        first = alert_raise(kind="node_down", key="ltc", message="refused")
        second = alert_raise(kind="node_down", key="ltc", message="timed out")

    assert first.pk == second.pk
    (alert,) = Alert.objects.all()
    assert (alert.count, alert.message, alert.status) == (2, "timed out", AlertStatus.OPEN)
    assert sorted(AlertNotification.objects.values_list("event", "channel")) == [
        ("opened", "email"),
        ("opened", "webhook"),
    ]
    assert sorted(args[0] for _, args in messages) == sorted(
        str(pk) for pk in AlertNotification.objects.values_list("pk", flat=True)
    )


def test_an_acknowledged_alert_raised_again_is_counted_and_tells_nobody(settings, messages):
    settings.ALERT_EMAILS = ["ops@kassa.test"]
    alert = alert_raise(kind="fee_over_cap", key="btc", message="m")
    alert_acknowledge(alert_id=alert.pk, by="ops@kassa.test")

    again = alert_raise(kind="fee_over_cap", key="btc", message="still over")

    assert (again.pk, again.status, again.count, again.message) == (alert.pk, "acknowledged", 2, "still over")
    assert AlertNotification.objects.count() == 1


def test_resolved_then_raised_again_opens_a_new_alert_told_again(settings):
    settings.ALERT_EMAILS = ["ops@kassa.test"]
    first = alert_raise(kind="node_down", key="ltc", message="down")
    alert_acknowledge(alert_id=first.pk, by="ops@kassa.test")

    assert alert_resolve(kind="node_down", key="ltc") == 1
    assert alert_resolve(kind="node_down", key="ltc") == 0
    second = alert_raise(kind="node_down", key="ltc", message="down again")

    assert second.pk != first.pk
    assert list(Alert.objects.order_by("pk").values_list("status", "resolved_by", "count")) == [
        ("resolved", "", 1),
        ("open", "", 1),
    ]
    told = AlertNotification.objects.order_by("created_at").values_list("alert_id", "event")
    assert list(told) == [(first.pk, "opened"), (first.pk, "resolved"), (second.pk, "opened")]


def test_resolution_tells_nobody_with_notify_resolved_off(settings):
    settings.ALERT_EMAILS = ["ops@kassa.test"]
    settings.ALERT_NOTIFY_RESOLVED = False
    alert = alert_raise(kind="node_down", key="ltc", message="down")

    alert_resolve_by_person(alert_id=alert.pk, by="ops@kassa.test")

    assert list(AlertNotification.objects.values_list("event", flat=True)) == ["opened"]


def test_without_channels_nothing_is_queued(messages, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        alert_raise(kind="node_down", key="ltc", message="down")

    assert AlertNotification.objects.count() == 0
    assert messages == []


def test_a_raise_rolled_back_with_its_caller_tells_nobody(
    settings, messages, django_capture_on_commit_callbacks
):
    from django.db import transaction

    settings.ALERT_EMAILS = ["ops@kassa.test"]
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        alert_raise(kind="sweep_failed", key="eth:0xabc", message="m")
        raise RuntimeError("the caller's transaction fails after the raise")

    assert (Alert.objects.count(), AlertNotification.objects.count(), messages) == (0, 0, [])


def test_open_alerts_include_acknowledged_ones_and_not_resolved_ones():
    raised = alert_raise(kind="node_down", key="ltc", message="m")
    acknowledged = alert_raise(kind="payout_wallet_short", key="ltc", message="m")
    alert_acknowledge(alert_id=acknowledged.pk, by="ops")
    gone = alert_raise(kind="fee_over_cap", key="ltc", message="m")
    alert_resolve_by_person(alert_id=gone.pk, by="ops")

    assert [alert.pk for alert in open_alerts(about="ltc")] == [raised.pk, acknowledged.pk]
