"""The login's second step: with an authenticator the password alone does not log in."""

from __future__ import annotations

import pytest

from security import login
from security.models import AuditEvent
from security.tests.conftest import code_at, wrong_code
from tests.dashboard import Dash
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

LOGIN = "/dashboard/login/"
CODE = "/dashboard/login/code/"
EMAIL = "owner@acme.test"


def _logged_in(dash) -> bool:  # type: ignore[no-untyped-def]
    return "_auth_user_id" in dash.client.session


def _actions() -> list[str]:
    return list(AuditEvent.objects.order_by("pk").values_list("action", flat=True))


def test_without_an_authenticator_the_password_logs_in_and_is_audited(clock, anon_dash, merchant):
    response = anon_dash.login(EMAIL)

    assert response.status_code == 302 and response["Location"] == "/dashboard/"
    assert _logged_in(anon_dash)
    assert _actions() == ["login.success"]


def test_with_an_authenticator_the_password_leads_to_the_code_page_not_in(clock, anon_dash, device):
    before = anon_dash.client.cookies["sessionid"].value if "sessionid" in anon_dash.client.cookies else None

    response = anon_dash.login(EMAIL)

    assert response.status_code == 302 and response["Location"] == CODE
    assert not _logged_in(anon_dash)
    assert anon_dash.client.cookies["sessionid"].value != before  # a new session key
    assert anon_dash.get("/dashboard/").status_code == 302  # still a stranger
    assert anon_dash.get(CODE).status_code == 200


def test_the_right_code_logs_in_and_goes_to_next(clock, anon_dash, device):
    anon_dash.post(LOGIN, {"username": EMAIL, "password": PASSWORD, "next": "/dashboard/balances/"})

    response = anon_dash.post(CODE, {"code": code_at(device.secret, clock())})

    assert response.status_code == 302 and response["Location"] == "/dashboard/balances/"
    assert _logged_in(anon_dash)
    assert _actions() == ["login.success"]
    assert AuditEvent.objects.get().detail == "with password and authenticator code"


def test_a_foreign_next_is_ignored(clock, anon_dash, device):
    anon_dash.post(LOGIN, {"username": EMAIL, "password": PASSWORD, "next": "https://evil.test/x"})

    response = anon_dash.post(CODE, {"code": code_at(device.secret, clock())})

    assert response["Location"] == "/dashboard/"


def test_a_wrong_code_does_not_log_in_and_is_audited(clock, anon_dash, device):
    anon_dash.login(EMAIL)

    response = anon_dash.post(CODE, {"code": wrong_code(device.secret, clock())})

    assert response.status_code == 400 and "That code is not right" in response.content.decode()
    assert not _logged_in(anon_dash)
    assert _actions() == ["login.fail"]


def test_a_used_code_does_not_log_in_twice(clock, anon_dash, device):
    code = code_at(device.secret, clock())
    anon_dash.login(EMAIL)
    anon_dash.post(CODE, {"code": code})
    other = Dash()  # another browser, the same code
    other.login(EMAIL)

    response = other.post(CODE, {"code": code})

    assert response.status_code == 400 and not _logged_in(other)


def test_wrong_codes_lock_the_pair_with_429(clock, anon_dash, device, settings):
    settings.DASHBOARD_LOGIN_FAILURE_LIMIT = 3
    anon_dash.login(EMAIL)
    for _ in range(3):
        anon_dash.post(CODE, {"code": wrong_code(device.secret, clock())})

    response = anon_dash.post(CODE, {"code": code_at(device.secret, clock())})

    assert response.status_code == 429
    assert "Too many wrong attempts" in response.content.decode()
    assert not _logged_in(anon_dash)


def test_a_recovery_code_logs_in_once_and_is_audited(clock, anon_dash, device):
    anon_dash.login(EMAIL)

    response = anon_dash.post(CODE, {"code": device.recovery_codes[0]})

    assert response.status_code == 302 and _logged_in(anon_dash)
    assert _actions() == ["login.success", "recovery_code.use"]
    assert AuditEvent.objects.get(action="recovery_code.use").detail == "9 left"
    anon_dash.post("/dashboard/logout/")
    anon_dash.login(EMAIL)
    assert anon_dash.post(CODE, {"code": device.recovery_codes[0]}).status_code == 400


def test_the_pending_step_expires_after_five_minutes(clock, anon_dash, device):
    anon_dash.login(EMAIL)
    clock.advance(login.PENDING_SECONDS)

    response = anon_dash.post(CODE, {"code": code_at(device.secret, clock())})

    assert response.status_code == 302 and response["Location"] == LOGIN
    assert not _logged_in(anon_dash)


def test_the_code_page_without_a_password_first_goes_to_the_login(clock, anon_dash, device):
    response = anon_dash.post(CODE, {"code": code_at(device.secret, clock())})

    assert response.status_code == 302 and response["Location"] == LOGIN
    assert not _logged_in(anon_dash)


def test_a_wrong_password_is_audited_for_the_account_it_named(clock, anon_dash, merchant):
    anon_dash.login(EMAIL, password="not it")
    anon_dash.login("nobody@nowhere.test", password="not it")

    event = AuditEvent.objects.get()
    assert (event.action, event.detail, event.company_id) == (
        "login.fail",
        "wrong password",
        merchant.company.pk,
    )


def test_logging_out_is_audited(clock, dash):
    dash.post("/dashboard/logout/")

    assert _actions() == ["logout"]
