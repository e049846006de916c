"""Idle timeout (with at most one session write a minute) and DASHBOARD_REQUIRE_2FA."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session

from security import middleware, totp
from security.models import AuditEvent
from security.testing import mark_step_up_fresh
from security.tests.conftest import code_at

pytestmark = pytest.mark.django_db


def _logged_in(dash) -> bool:  # type: ignore[no-untyped-def]
    return "_auth_user_id" in dash.client.session


def test_an_idle_session_is_logged_out_with_a_message(clock, dash, settings):
    settings.DASHBOARD_IDLE_TIMEOUT_SECONDS = 1800
    dash.get("/dashboard/")
    clock.advance(1801)

    response = dash.get("/dashboard/balances/", follow=True)

    assert response.redirect_chain[0] == ("/dashboard/login/?next=%2Fdashboard%2Fbalances%2F", 303)
    assert "logged out after 30 minutes without activity" in response.content.decode()
    assert not _logged_in(dash)
    assert AuditEvent.objects.get().action == "logout.idle"


def test_activity_keeps_the_session(clock, dash, settings):
    settings.DASHBOARD_IDLE_TIMEOUT_SECONDS = 1800
    for _ in range(4):
        dash.get("/dashboard/")
        clock.advance(1000)

    assert dash.get("/dashboard/").status_code == 200
    assert _logged_in(dash)


def test_the_last_seen_time_is_written_at_most_once_a_minute(clock, dash):
    dash.get("/dashboard/")
    first = dash.client.session[middleware.SEEN_KEY]

    clock.advance(59)
    dash.get("/dashboard/")
    unchanged = dash.client.session[middleware.SEEN_KEY]
    clock.advance(1)
    dash.get("/dashboard/")

    assert unchanged == first
    assert dash.client.session[middleware.SEEN_KEY] == first + 60


def test_a_request_within_the_minute_does_not_save_the_session(clock, dash):
    dash.get("/dashboard/balances/")
    clock.advance(10)
    before = Session.objects.get().expire_date

    dash.get("/dashboard/balances/")

    assert Session.objects.get().expire_date == before


def test_an_idle_session_on_an_action_post_is_refused(clock, dash, settings):
    settings.DASHBOARD_IDLE_TIMEOUT_SECONDS = 60
    dash.get("/dashboard/")
    clock.advance(61)

    response = dash.post("/dashboard/settings/api/token/rotate/")

    assert response.status_code == 303 and response["Location"] == "/dashboard/login/"
    assert not _logged_in(dash)


def test_require_2fa_sends_every_page_to_the_enrolment(clock, dash, settings):
    settings.DASHBOARD_REQUIRE_2FA = True

    for path in [
        "/dashboard/",
        "/dashboard/settings/api/",
        "/dashboard/security/",
        "/dashboard/security/audit/",
    ]:
        response = dash.get(path)
        assert (path, response.status_code, response["Location"]) == (path, 302, "/dashboard/security/2fa/")


def test_require_2fa_leaves_the_enrolment_and_logout_reachable(clock, dash, settings):
    settings.DASHBOARD_REQUIRE_2FA = True

    enrol = dash.get("/dashboard/security/2fa/")
    step_up = dash.get("/dashboard/confirm/")
    logout = dash.post("/dashboard/logout/")

    assert enrol.status_code == 303 and enrol["Location"].startswith("/dashboard/confirm/")
    assert step_up.status_code == 200
    assert logout.status_code == 302 and not _logged_in(dash)


def test_require_2fa_lets_users_with_an_authenticator_through(clock, dash, device, settings):
    settings.DASHBOARD_REQUIRE_2FA = True

    assert dash.get("/dashboard/").status_code == 200


def test_require_2fa_does_not_touch_strangers_or_the_api(clock, anon_dash, api, settings):
    settings.DASHBOARD_REQUIRE_2FA = True

    assert anon_dash.get("/dashboard/login/").status_code == 200
    assert api.get("/api/company/balances").status_code == 200


def test_the_enrolment_under_require_2fa_finishes_into_the_dashboard(clock, dash, owner, settings):
    settings.DASHBOARD_REQUIRE_2FA = True
    mark_step_up_fresh(dash.client)
    dash.get("/dashboard/security/2fa/")
    secret = totp.device_secret(owner.totp_device)

    response = dash.post("/dashboard/security/2fa/", {"code": code_at(secret, clock())})

    assert response.status_code == 302 and response["Location"] == "/dashboard/security/recovery-codes/"
    assert dash.get("/dashboard/").status_code == 200


def test_an_operator_without_a_company_enrols_under_require_2fa_and_reaches_the_alerts(clock, settings):
    from tests.dashboard import Dash
    from tests.factories import UserFactory

    settings.DASHBOARD_REQUIRE_2FA = True
    operator = UserFactory(email="ops@kassa.test", is_staff=True)
    dash = Dash()
    dash.client.force_login(operator)

    sent = dash.get("/dashboard/alerts/")
    enrol = dash.get(sent["Location"])  # the step-up first: the operator's password
    confirm = dash.client.get(enrol["Location"])
    mark_step_up_fresh(dash.client)
    page = dash.get("/dashboard/security/2fa/")
    secret = totp.device_secret(operator.totp_device)
    enrolled = dash.post("/dashboard/security/2fa/", {"code": code_at(secret, clock())})
    alerts = dash.get("/dashboard/alerts/")

    assert (sent.status_code, sent["Location"]) == (302, "/dashboard/security/2fa/")
    assert enrol.status_code == 303 and enrol["Location"].startswith("/dashboard/confirm/")
    assert confirm.status_code == 200  # a page of its own: no redirect loop for an account without a company
    assert page.status_code == 200
    assert enrolled.status_code == 302 and totp.has_totp(operator)
    assert alerts.status_code == 200
    assert not AuditEvent.objects.exists()  # an operator without a company has no company log to write to
