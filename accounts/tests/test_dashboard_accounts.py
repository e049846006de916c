"""Dashboard accounts: sign up (token shown once), log in with throttling, log out, password reset."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from rest_framework.test import APIClient

from core import throttle
from payments.models import Company
from tests.dashboard import (  # noqa: F401 - fixtures
    CSRF_INPUT,
    PASSWORD,
    Dash,
    anon_dash,
    dash,
    dashboard_rates,
    text,
)
from tests.factories import MerchantFactory, UserFactory

pytestmark = pytest.mark.django_db

SIGNUP = "/dashboard/signup/"
LOGIN = "/dashboard/login/"
NEW_PASSWORD = "another long passphrase"


def _signup(client: Dash, **overrides: str):  # type: ignore[no-untyped-def]
    body = {
        "name": "Roastery",
        "email": "Owner@Roastery.test",
        "password1": "a long sandbox passphrase",
        "password2": "a long sandbox passphrase",
    }
    body.update(overrides)
    return client.post(SIGNUP, body)


def _token_on(html: str) -> str:
    match = re.search(r'data-testid="public-token">([^<]+)<', html)
    assert match, "no token on the page"
    return match.group(1)


# --- sign up --------------------------------------------------------------------------------------------


def _mailed_link(index: int = -1) -> str:
    match = re.search(r"https?://[^/]+(/dashboard/signup/confirm/\S+/)", mail.outbox[index].body)
    assert match, mail.outbox[index].body
    return match.group(1)


def test_signup_mails_a_link_that_creates_the_merchant_and_shows_the_token_once(anon_dash):
    response = _signup(anon_dash)

    assert response.status_code == 302 and response["Location"] == "/dashboard/signup/sent/"
    assert not Company.objects.exists()  # nothing until the address is confirmed
    assert "owner@roastery.test" in text(anon_dash.get("/dashboard/signup/sent/"))
    confirm = anon_dash.post(_mailed_link(), {"password": "a long sandbox passphrase"})
    assert confirm.status_code == 302 and confirm["Location"] == "/dashboard/welcome/"
    company = Company.objects.get(owner__username="owner@roastery.test")
    assert company.name == "Roastery"
    welcome = anon_dash.get("/dashboard/welcome/")
    token = _token_on(text(welcome))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/api/company/balances").status_code == 200
    again = anon_dash.get("/dashboard/welcome/", follow=True)
    assert token not in text(again)
    assert company.token_prefix in text(again)


def test_the_signup_form_read_from_the_page_carries_its_own_csrf_token(db):
    client = Dash()
    page = client.get(SIGNUP)
    token = CSRF_INPUT.search(text(page))
    assert token is not None

    response = client.client.post(
        SIGNUP,
        {
            "csrfmiddlewaretoken": token.group(1),
            "name": "Roastery",
            "email": "owner@roastery.test",
            "password1": "a long sandbox passphrase",
            "password2": "a long sandbox passphrase",
        },
    )

    assert response.status_code == 302
    assert [message.to for message in mail.outbox] == [["owner@roastery.test"]]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"password2": "something else entirely"}, "The two passwords differ."),
        ({"password1": "123", "password2": "123"}, "This password is too short."),
        ({"password1": "password", "password2": "password"}, "This password is too common."),
        ({"email": "not-an-email"}, "Enter a valid email address."),
        ({"name": ""}, "This field is required."),
        ({"name": "x" * 201}, "Ensure this value has at most 200 characters"),
    ],
)
def test_signup_refuses_bad_input_and_creates_nothing(anon_dash, overrides, message):
    response = _signup(anon_dash, **overrides)

    assert response.status_code == 200
    assert message in text(response)
    assert not get_user_model().objects.exists()


def test_signup_with_a_taken_email_answers_as_for_a_new_one_and_tells_the_owner(anon_dash, merchant):
    response = _signup(anon_dash, email="OWNER@acme.test")

    assert response.status_code == 302 and response["Location"] == "/dashboard/signup/sent/"
    assert "owner@acme.test" in text(anon_dash.get("/dashboard/signup/sent/"))
    assert Company.objects.count() == 1
    assert len(mail.outbox) == 1 and "already has an account" in mail.outbox[0].body
    assert "/dashboard/password-reset/" in mail.outbox[0].body


def test_a_logged_in_merchant_is_sent_from_signup_to_the_dashboard(dash):
    response = dash.get(SIGNUP)

    assert response.status_code == 302 and response["Location"] == "/dashboard/"


# --- log in and out -------------------------------------------------------------------------------------


def test_login_with_the_right_password_opens_the_dashboard(anon_dash, merchant):
    response = anon_dash.login("Owner@Acme.test")

    assert response.status_code == 302 and response["Location"] == "/dashboard/"
    assert anon_dash.get("/dashboard/").status_code == 200


def test_login_follows_a_safe_next_and_ignores_a_foreign_one(anon_dash, merchant):
    first = anon_dash.post(
        LOGIN, {"username": "owner@acme.test", "password": PASSWORD, "next": "/dashboard/invoices/"}
    )
    anon_dash.post("/dashboard/logout/")
    second = anon_dash.post(
        LOGIN, {"username": "owner@acme.test", "password": PASSWORD, "next": "https://evil.test/"}
    )

    assert first["Location"] == "/dashboard/invoices/"
    assert second["Location"] == "/dashboard/"


def test_login_with_a_wrong_password_is_refused(anon_dash, merchant):
    response = anon_dash.login("owner@acme.test", "wrong password")

    assert response.status_code == 200
    assert "Please enter a correct e-mail and password" in text(response)
    assert anon_dash.get("/dashboard/").status_code == 302


def test_five_failures_lock_the_username_and_address_pair_even_for_the_right_password(anon_dash, merchant):
    for _ in range(5):
        assert anon_dash.login("owner@acme.test", "wrong password").status_code == 200

    response = anon_dash.login("owner@acme.test")

    assert response.status_code == 429
    assert "Too many failed log-in attempts" in text(response)
    assert anon_dash.get("/dashboard/").status_code == 302


def test_the_lock_is_per_address_and_per_username(merchant, other_merchant):
    attacker = Dash(REMOTE_ADDR="203.0.113.7")
    for _ in range(5):
        attacker.login("owner@acme.test", "wrong password")

    owner_elsewhere = Dash(REMOTE_ADDR="198.51.100.20")
    other_user_same_address = Dash(REMOTE_ADDR="203.0.113.7")

    assert owner_elsewhere.login("owner@acme.test").status_code == 302
    assert other_user_same_address.login("owner@other.test").status_code == 302
    assert attacker.login("owner@acme.test").status_code == 429


def test_behind_a_proxy_the_client_address_comes_from_x_forwarded_for(merchant, settings):
    settings.NUM_PROXIES = 1
    attacker = Dash(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.7")
    for _ in range(5):
        attacker.login("owner@acme.test", "wrong password")

    owner = Dash(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.20")

    assert owner.login("owner@acme.test").status_code == 302
    assert attacker.login("owner@acme.test").status_code == 429


def test_the_count_is_case_insensitive_on_the_username(anon_dash, merchant):
    for variant in [
        "owner@acme.test",
        "OWNER@acme.test",
        "Owner@Acme.Test",
        " owner@acme.test",
        "owner@ACME.test",
    ]:
        anon_dash.login(variant, "wrong password")

    assert anon_dash.login("owner@acme.test").status_code == 429


def test_a_success_clears_the_count(anon_dash, merchant):
    for _ in range(4):
        anon_dash.login("owner@acme.test", "wrong password")
    assert anon_dash.login("owner@acme.test").status_code == 302
    anon_dash.post("/dashboard/logout/")

    for _ in range(4):
        anon_dash.login("owner@acme.test", "wrong password")

    assert anon_dash.login("owner@acme.test").status_code == 302


def test_the_lock_ends_with_its_window(anon_dash, merchant, settings, monkeypatch):
    settings.DASHBOARD_LOGIN_FAILURE_WINDOW_SECONDS = 60
    start = time.time()
    monkeypatch.setattr(throttle, "_now", lambda: start)
    for _ in range(5):
        anon_dash.login("owner@acme.test", "wrong password")
    assert anon_dash.login("owner@acme.test").status_code == 429

    monkeypatch.setattr(throttle, "_now", lambda: start + 59)  # still inside the window
    assert anon_dash.login("owner@acme.test").status_code == 429
    monkeypatch.setattr(throttle, "_now", lambda: start + 60)  # the window is over

    assert anon_dash.login("owner@acme.test").status_code == 302


def test_logout_is_a_post_and_ends_the_session(dash):
    assert dash.get("/dashboard/logout/").status_code == 405

    response = dash.post("/dashboard/logout/")

    assert response.status_code == 302 and response["Location"] == "/dashboard/login/"
    assert dash.get("/dashboard/").status_code == 302


def test_a_user_without_a_company_gets_a_clear_refusal(db):
    user = UserFactory(email="staff@kassa.test")
    client = Dash()
    client.client.force_login(user)

    response = client.get("/dashboard/invoices/")

    assert response.status_code == 403
    assert "has no company" in text(response)


def test_an_operator_without_a_company_is_taken_to_the_alerts_page(db):
    client = Dash()
    client.client.force_login(UserFactory(email="ops@kassa.test", is_staff=True))

    landing = client.get("/dashboard/")
    alerts = client.get(landing["Location"])

    assert landing.status_code == 302 and landing["Location"] == "/dashboard/alerts/"
    assert client.get("/dashboard/invoices/")["Location"] == "/dashboard/alerts/"
    assert alerts.status_code == 200 and "has no company" not in text(alerts)
    page = alerts.content.decode()
    assert 'href="/dashboard/status/"' in page and 'href="/dashboard/security/"' in page
    assert 'href="/dashboard/invoices/"' not in page  # no merchant pages in an operator's navigation
    assert 'href="/dashboard/settings/api/"' not in page


# --- password reset -------------------------------------------------------------------------------------


def test_password_reset_mails_a_link_that_sets_a_new_password(anon_dash, merchant):
    response = anon_dash.post("/dashboard/password-reset/", {"email": "owner@acme.test"})

    assert response.status_code == 302 and response["Location"] == "/dashboard/password-reset/sent/"
    assert len(mail.outbox) == 1
    link = re.search(r"https?://[^/]+(/dashboard/password-reset/\S+/\S+/)", mail.outbox[0].body)
    assert link, mail.outbox[0].body
    form = anon_dash.get(link.group(1), follow=True)
    assert "Choose a new password" in text(form)
    set_password = anon_dash.post(
        form.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    )
    assert set_password["Location"] == "/dashboard/password-reset/complete/"
    assert anon_dash.login("owner@acme.test", NEW_PASSWORD).status_code == 302


def test_a_merchant_created_without_password_sets_one_through_the_reset(anon_dash, db):
    MerchantFactory(name="Later Shop", email="later@shop.test", password=None)
    assert anon_dash.login("later@shop.test", "").status_code == 200

    anon_dash.post("/dashboard/password-reset/", {"email": "Later@Shop.test"})

    assert len(mail.outbox) == 1
    link = re.search(r"https?://[^/]+(/dashboard/password-reset/\S+/\S+/)", mail.outbox[0].body)
    assert link
    form = anon_dash.get(link.group(1), follow=True)
    anon_dash.post(form.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert anon_dash.login("later@shop.test", NEW_PASSWORD).status_code == 302


def test_a_user_without_company_and_password_gets_no_reset_mail(anon_dash, db):
    UserFactory(email="sso@kassa.test", password=None)

    anon_dash.post("/dashboard/password-reset/", {"email": "sso@kassa.test"})

    assert mail.outbox == []


def test_password_reset_for_an_unknown_email_sends_nothing_and_says_the_same(anon_dash, merchant):
    response = anon_dash.post("/dashboard/password-reset/", {"email": "nobody@acme.test"})

    assert response["Location"] == "/dashboard/password-reset/sent/"
    assert mail.outbox == []


def test_a_used_or_forged_reset_link_is_refused(anon_dash, merchant):
    response = anon_dash.get("/dashboard/password-reset/MQ/forged-token/")

    assert response.status_code == 200
    assert "This link no longer works" in text(response)
