"""Static deposit addresses found by e-mail only where the merchant turned that on
(`Company.static_deposit_match_email`, off by default): the API, the dashboard page and its audited switch."""

from __future__ import annotations

import pytest

from payments.models import Company, StaticDepositAddress
from security.models import AuditEvent
from security.testing import forget_step_up, mark_step_up_fresh
from tests.dashboard import Dash, text
from tests.factories import StaticDepositAddressFactory

pytestmark = pytest.mark.django_db

STATIC = "/api/addresses/v1/static-deposits"
PAGE = "/dashboard/addresses/"


def _static(api, user: str, email: str, network: str = "btc"):  # type: ignore[no-untyped-def]
    body = {"internal_user_id": user, "email": email, "asset": network, "network": network}  # btc, ltc
    return api.post(STATIC, body, format="json")


def _match_email(company: Company, on: bool) -> None:
    Company.objects.filter(pk=company.pk).update(static_deposit_match_email=on)


def test_by_default_another_user_with_the_same_email_gets_an_address_of_their_own(api, merchant):
    victim = _static(api, "user-1", "alice@example.com").json()

    attacker = _static(api, "user-2", "Alice@Example.com")

    assert attacker.status_code == 201
    assert attacker.json()["address"] != victim["address"]
    assert attacker.json()["internal_user_id"] == "user-2"
    assert StaticDepositAddress.objects.count() == 2


def test_with_matching_on_the_same_email_gets_the_existing_address(api, merchant):
    _match_email(merchant.company, True)
    first = _static(api, "user-1", "alice@example.com").json()

    again = _static(api, "user-2", "Alice@Example.com")

    assert again.status_code == 200
    assert again.json() == first
    assert StaticDepositAddress.objects.count() == 1


@pytest.mark.parametrize("on", [False, True])
def test_the_internal_id_always_wins_and_a_blank_email_never_matches(api, merchant, on):
    _match_email(merchant.company, on)
    first = _static(api, "user-1", "alice@example.com").json()
    no_email = _static(api, "user-9", None).json()

    same_id = _static(api, "user-1", "someone-else@example.com")
    also_no_email = _static(api, "user-10", None)

    assert same_id.status_code == 200 and same_id.json()["id"] == first["id"]
    assert also_no_email.status_code == 201 and also_no_email.json()["id"] != no_email["id"]


def test_matching_never_crosses_merchants_or_networks(api, merchant, other_merchant):
    _match_email(merchant.company, True)
    _match_email(other_merchant.company, True)
    theirs = StaticDepositAddressFactory(
        company=other_merchant.company, internal_user_id="u", email="a@example.com"
    )
    on_btc = _static(api, "user-1", "a@example.com").json()

    on_ltc = _static(api, "user-2", "a@example.com", network="ltc")

    assert on_btc["address"] != theirs.deposit_address.address
    assert on_ltc.status_code == 201 and on_ltc.json()["address"] != on_btc["address"]


# --- the dashboard page ---------------------------------------------------------------------------------


@pytest.fixture
def dash(merchant):  # type: ignore[no-untyped-def]
    client = Dash()
    client.client.force_login(merchant.company.owner)
    mark_step_up_fresh(client.client)  # the switch needs a fresh confirmation (tested below)
    return client


def _create(dash: Dash, user: str, email: str):  # type: ignore[no-untyped-def]
    return dash.post(PAGE, {"internal_user_id": user, "email": email, "network": "btc"}, follow=True)


def test_the_page_shows_matching_off_with_the_risk_explained(dash):
    page = text(dash.get(PAGE))

    assert 'data-testid="matching-state">Off (recommended).' in page
    assert "whoever types someone else" in page
    assert "Also match by e-mail" in page


def test_the_page_follows_the_setting_when_creating(dash, merchant):
    _create(dash, "user-1", "alice@example.com")
    off = _create(dash, "user-2", "alice@example.com")
    _match_email(merchant.company, True)

    on = _create(dash, "user-3", "alice@example.com")

    assert "Address created for user-2" in text(off)
    assert "Found by e-mail: user-1 already has" in text(on)
    assert sorted(StaticDepositAddress.objects.values_list("internal_user_id", flat=True)) == [
        "user-1",
        "user-2",
    ]


def test_turning_matching_on_and_off_is_saved_and_audited(dash, merchant):
    turned_on = dash.post(PAGE, {"form": "matching", "match_email": "on"}, follow=True)
    on = Company.objects.get(pk=merchant.company.pk).static_deposit_match_email
    again = dash.post(PAGE, {"form": "matching", "match_email": "on"}, follow=True)

    dash.post(PAGE, {"form": "matching", "match_email": "off"})

    assert on is True
    assert 'data-testid="matching-state">On.' in text(turned_on)
    assert "Nothing changed." in text(again)
    assert Company.objects.get(pk=merchant.company.pk).static_deposit_match_email is False
    events = AuditEvent.objects.filter(company=merchant.company, action="static_deposit_matching.change")
    assert sorted(event.detail for event in events) == [
        "matching static addresses by e-mail turned off",
        "matching static addresses by e-mail turned on",
    ]
    assert all(event.user_id == merchant.company.owner.pk for event in events)


def test_the_switch_needs_a_fresh_confirmation(dash, merchant):
    forget_step_up(dash.client)

    response = dash.post(PAGE, {"form": "matching", "match_email": "on"})

    assert response.status_code == 200 and "Confirm it's you" in response.content.decode()
    assert not Company.objects.get(pk=merchant.company.pk).static_deposit_match_email
    assert not AuditEvent.objects.filter(action="static_deposit_matching.change").exists()


@pytest.mark.parametrize("value", ["", "yes", "ON", "1"])
def test_a_bad_switch_value_changes_nothing(dash, merchant, value):
    response = dash.post(PAGE, {"form": "matching", "match_email": value}, follow=True)

    assert response.status_code == 200
    assert "Nothing changed: choose on or off." in text(response)
    assert Company.objects.get(pk=merchant.company.pk).static_deposit_match_email is False
    assert not AuditEvent.objects.filter(action="static_deposit_matching.change").exists()


def test_the_switch_needs_a_logged_in_merchant_and_csrf(merchant):
    anonymous = Dash().post(PAGE, {"form": "matching", "match_email": "on"})
    logged_in_without_token = Dash()
    logged_in_without_token.client.force_login(merchant.company.owner)
    forged = logged_in_without_token.raw_post(PAGE, {"form": "matching", "match_email": "on"})

    assert anonymous.status_code == 302 and "/dashboard/login/" in anonymous["Location"]
    assert forged.status_code == 403
    assert Company.objects.get(pk=merchant.company.pk).static_deposit_match_email is False
