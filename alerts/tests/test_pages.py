from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from alerts.models import Alert, AlertStatus
from alerts.services import alert_raise
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PAGE = "/dashboard/alerts/"


@pytest.fixture
def staff(client):
    user = UserFactory(email="ops@kassa.test", is_staff=True)  # staff without a company of their own
    client.force_login(user)
    return user


@pytest.fixture
def alert():
    return alert_raise(
        kind="payout_wallet_short", key="btc", message="btc: 2 withdrawal(s) waiting. Fund it."
    )


def test_staff_see_open_alerts_with_their_buttons_and_the_link(staff, client, alert):
    alert_raise(kind="payout_wallet_short", key="btc", message="btc: 3 withdrawal(s) waiting. Fund it.")

    page = client.get(PAGE)

    assert page.status_code == 200
    assert page.headers["Cache-Control"].startswith("max-age=0")
    text = page.content.decode()
    assert "payout_wallet_short" in text and "btc: 3 withdrawal(s) waiting. Fund it." in text
    assert f'action="/dashboard/alerts/{alert.pk}/acknowledge/"' in text
    assert f'action="/dashboard/alerts/{alert.pk}/resolve/"' in text
    assert 'href="/dashboard/alerts/" aria-current="page"' in text
    assert '<td class="num">2</td>' in text
    assert "<script>" not in text and "style=" not in text  # CSP: no inline script or style


def test_a_person_acknowledges_then_resolves_from_the_page(staff, client, alert):
    acknowledged = client.post(f"{PAGE}{alert.pk}/acknowledge/", follow=True)
    alert.refresh_from_db()
    assert (alert.status, alert.acknowledged_by) == (AlertStatus.ACKNOWLEDGED, "ops@kassa.test")
    assert "Acknowledged payout_wallet_short btc" in acknowledged.content.decode()
    assert f'action="/dashboard/alerts/{alert.pk}/acknowledge/"' not in acknowledged.content.decode()

    resolved = client.post(f"{PAGE}{alert.pk}/resolve/", follow=True)

    alert.refresh_from_db()
    assert (alert.status, alert.resolved_by) == (AlertStatus.RESOLVED, "ops@kassa.test")
    assert resolved.redirect_chain == [(PAGE, 302)]
    text = resolved.content.decode()
    assert 'data-testid="resolved-alert-row"' in text and "No open alert." in text


def test_acknowledging_a_resolved_alert_says_why_and_changes_nothing(staff, client, alert):
    client.post(f"{PAGE}{alert.pk}/resolve/")

    page = client.post(f"{PAGE}{alert.pk}/acknowledge/", follow=True)

    assert "Cannot acknowledge an alert that is resolved." in page.content.decode()
    alert.refresh_from_db()
    assert (alert.status, alert.acknowledged_at) == (AlertStatus.RESOLVED, None)


@pytest.mark.parametrize("alert_id", ["999", "99999999999999999999999999"])
def test_an_unknown_alert_is_404(staff, client, alert_id):
    assert client.post(f"{PAGE}{alert_id}/resolve/").status_code == 404
    assert client.post(f"{PAGE}{alert_id}/acknowledge/").status_code == 404


def test_the_buttons_take_only_posts_with_a_csrf_token(staff, alert):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(staff)

    assert strict.get(f"{PAGE}{alert.pk}/resolve/").status_code == 405
    assert strict.post(f"{PAGE}{alert.pk}/resolve/").status_code == 403

    alert.refresh_from_db()
    assert alert.status == AlertStatus.OPEN


def test_a_merchant_neither_sees_the_page_nor_the_link_nor_can_post(merchant, client, alert):
    client.force_login(merchant.company.owner)

    assert client.get(PAGE).status_code == 404
    assert client.post(f"{PAGE}{alert.pk}/acknowledge/").status_code == 404
    assert client.post(f"{PAGE}{alert.pk}/resolve/").status_code == 404
    assert 'href="/dashboard/alerts/"' not in client.get("/dashboard/").content.decode()

    alert.refresh_from_db()
    assert (alert.status, alert.acknowledged_at, alert.resolved_at) == (AlertStatus.OPEN, None, None)


def test_an_anonymous_visitor_is_sent_to_log_in(client, alert):
    page = client.get(PAGE)

    assert page.status_code == 302 and page.headers["Location"].startswith("/dashboard/login/")
    assert client.post(f"{PAGE}{alert.pk}/resolve/").status_code == 302
    alert.refresh_from_db()
    assert alert.status == AlertStatus.OPEN


def _alerts(*args: str) -> str:
    out = StringIO()
    call_command("alerts", *args, stdout=out)
    return out.getvalue()


def test_the_command_lists_acknowledges_and_resolves(alert):
    assert f"{alert.pk:<6} open" in _alerts("list")

    assert "acknowledged by ann" in _alerts("ack", str(alert.pk), "--by", "ann")
    assert "resolved by ann" in _alerts("resolve", str(alert.pk), "--by", "ann")

    assert _alerts("list") == ""
    (row,) = [json.loads(line) for line in _alerts("list", "--resolved", "--json").splitlines()]
    assert (row["id"], row["status"], row["acknowledgedBy"], row["resolvedBy"]) == (
        alert.pk,
        "resolved",
        "ann",
        "ann",
    )
    with pytest.raises(CommandError, match="Cannot acknowledge an alert that is resolved"):
        _alerts("ack", str(alert.pk), "--by", "ann")
    with pytest.raises(CommandError, match="No such alert"):
        _alerts("resolve", "999", "--by", "ann")
    assert Alert.objects.get().status == AlertStatus.RESOLVED
