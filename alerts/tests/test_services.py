from __future__ import annotations

import logging

import pytest

from alerts.models import Alert, AlertStatus
from alerts.services import alert_raise, alert_resolve, open_alerts


@pytest.mark.django_db
def test_an_alert_is_raised_once_counted_while_open_and_raised_anew_after_it_is_resolved(caplog):
    with caplog.at_level(logging.ERROR, logger="kassa.alerts"):
        alert_raise(kind="node_down", key="ltc", message="first")
        alert_raise(kind="node_down", key="ltc", message="second")
    assert [r.getMessage() for r in caplog.records] == [
        "ALERT node_down ltc: first",
        "ALERT node_down ltc: second",
    ]
    (alert,) = Alert.objects.all()
    assert (alert.status, alert.count, alert.message) == (AlertStatus.OPEN, 2, "second")

    assert alert_resolve(kind="node_down", key="ltc") == 1
    assert alert_resolve(kind="node_down", key="ltc") == 0
    alert_raise(kind="node_down", key="ltc", message="again")
    assert list(Alert.objects.order_by("pk").values_list("status", "count")) == [("resolved", 2), ("open", 1)]


@pytest.mark.django_db
def test_open_alerts_about_a_code_are_its_own_and_not_a_longer_codes():
    alert_raise(kind="node_down", key="usdc", message="m")
    alert_raise(kind="payout_conflict", key="usdc:abc", message="m")
    alert_raise(kind="node_down", key="usdcx", message="m")
    assert sorted(a.key for a in open_alerts(about="usdc")) == ["usdc", "usdc:abc"]
    assert len(open_alerts()) == 3
