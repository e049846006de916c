"""A company's owner requires two-factor authentication of every member: audited; a member without it is
sent to the enrolment page on every dashboard page but enrolling, confirming, leaving and the security
overview, until enrolled; the API is not affected."""

from __future__ import annotations

from typing import Any

import pytest

from security import totp
from security.models import AuditEvent, CompanySecurity
from security.requirements import company_require_2fa_set, company_requires_2fa
from security.testing import mark_step_up_fresh
from security.tests.conftest import code_at
from tests.dashboard import Dash, text
from tests.factories import MemberFactory, TotpDeviceFactory

pytestmark = pytest.mark.django_db

SETTING = "/dashboard/security/require-2fa/"
ENROL = "/dashboard/security/2fa/"


def _dash(user: Any) -> Dash:
    dash = Dash()
    dash.client.force_login(user)
    return dash


@pytest.fixture
def required(clock, merchant, device):  # type: ignore[no-untyped-def]
    """The owner (with an authenticator) has required 2FA of every member."""
    company_require_2fa_set(company=merchant.company, required=True, by=merchant.company.owner)
    return merchant.company


def test_the_owner_turns_it_on_from_the_security_page_and_it_is_audited(clock, dash, merchant, device):
    mark_step_up_fresh(dash.client)
    page = text(dash.get("/dashboard/security/"))

    response = dash.post(SETTING, {"require_2fa": "on"}, follow=True)

    assert f'action="{SETTING}"' in page and "Require it of every member" in page
    assert "Every member now needs two-factor authentication." in text(response)
    assert company_requires_2fa(company=merchant.company)
    event = AuditEvent.objects.get(action="security.require_2fa")
    assert (event.user, event.detail) == (merchant.company.owner, "on")


def test_turning_it_off_is_audited_too(clock, dash, required):
    mark_step_up_fresh(dash.client)

    dash.post(SETTING, {})

    assert not company_requires_2fa(company=required)
    assert (
        AuditEvent.objects.filter(action="security.require_2fa").values_list("detail", flat=True).get()
        == "off"
    )


def test_the_owner_needs_an_authenticator_before_requiring_one(clock, dash, merchant):
    mark_step_up_fresh(dash.client)

    response = dash.post(SETTING, {"require_2fa": "on"}, follow=True)

    assert "Turn on your own authenticator first." in text(response)
    assert not CompanySecurity.objects.filter(require_2fa=True).exists()
    assert not AuditEvent.objects.filter(action="security.require_2fa").exists()


def test_changing_it_needs_a_fresh_step_up(clock, dash, merchant, device):
    response = dash.post(SETTING, {"require_2fa": "on"})

    assert response.status_code == 200 and "Confirm it" in text(response)
    assert not company_requires_2fa(company=merchant.company)


@pytest.mark.parametrize("role", ["admin", "finance", "viewer"])
def test_only_an_owner_changes_it(clock, merchant, role):
    member = MemberFactory(company=merchant.company, role=role).user
    TotpDeviceFactory(user=member)
    dash = _dash(member)
    mark_step_up_fresh(dash.client)

    response = dash.post(SETTING, {"require_2fa": "on"})
    page = text(dash.get("/dashboard/security/"))

    assert response.status_code in (302, 403)
    assert not company_requires_2fa(company=merchant.company)
    assert "Set by an owner of the company." in page and f'action="{SETTING}"' not in page


def test_a_member_without_2fa_is_sent_to_the_enrolment_on_every_page(clock, required):
    member = MemberFactory(company=required, role="finance").user
    dash = _dash(member)

    for path in [
        "/dashboard/",
        "/dashboard/withdrawals/",
        "/dashboard/settings/api/",
        "/dashboard/balances/",
    ]:
        response = dash.get(path)
        assert (path, response.status_code, response["Location"]) == (path, 302, ENROL)


def test_the_enrolment_the_overview_and_logout_stay_reachable(clock, required):
    member = MemberFactory(company=required, role="viewer").user
    dash = _dash(member)

    overview = dash.get("/dashboard/security/")
    enrol = dash.get(ENROL)
    step_up = dash.get("/dashboard/confirm/")
    logout = dash.post("/dashboard/logout/")

    assert overview.status_code == 200 and "Required: a member without an authenticator" in text(overview)
    assert enrol.status_code == 303 and enrol["Location"].startswith("/dashboard/confirm/")
    assert step_up.status_code == 200
    assert logout.status_code == 302


def test_a_member_who_enrols_goes_on_into_the_dashboard(clock, required):
    member = MemberFactory(company=required, role="finance").user
    dash = _dash(member)
    mark_step_up_fresh(dash.client)
    dash.get(ENROL)
    secret = totp.device_secret(member.totp_device)

    enrolled = dash.post(ENROL, {"code": code_at(secret, clock())})

    assert enrolled.status_code == 302 and enrolled["Location"] == "/dashboard/security/recovery-codes/"
    assert dash.get("/dashboard/").status_code == 200


def test_a_member_with_2fa_passes(clock, required):
    member = MemberFactory(company=required, role="finance").user
    TotpDeviceFactory(user=member)

    assert _dash(member).get("/dashboard/").status_code == 200


def test_a_member_cannot_turn_theirs_off_while_it_is_required(clock, required, dash):
    mark_step_up_fresh(dash.client)

    response = dash.post("/dashboard/security/2fa/disable/", follow=True)

    assert "required by your company: it cannot be turned off" in text(response)
    assert totp.has_totp(required.owner)


def test_other_companies_and_the_api_are_not_affected(clock, required, other_merchant, api):
    other = _dash(other_merchant.company.owner)

    assert other.get("/dashboard/").status_code == 200
    assert api.get("/api/company/balances").status_code == 200
