"""Log-in throttling beyond the (e-mail, address) pair: one account guessed from many addresses, one password
sprayed over many accounts from one address; what a password reset clears; the reset's own budgets; the
Django admin's log-in (docs/security.md)."""

from __future__ import annotations

import importlib
import re
import time

import pyotp
import pytest
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.urls import clear_url_caches

from core import throttle
from security import totp
from tests.factories import PASSWORD, TotpDeviceFactory, UserFactory

pytestmark = pytest.mark.django_db

LOGIN = "/dashboard/login/"
RESET = "/dashboard/password-reset/"
ADMIN_LOGIN = "/admin/login/"
NEW_PASSWORD = "another long passphrase"
CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"')


@pytest.fixture(autouse=True)
def limits(settings):  # type: ignore[no-untyped-def]
    settings.DASHBOARD_LOGIN_FAILURE_LIMIT = 5
    settings.DASHBOARD_LOGIN_ACCOUNT_FAILURE_LIMIT = 8
    settings.DASHBOARD_LOGIN_IP_FAILURE_LIMIT = 12
    settings.DASHBOARD_LOGIN_FAILURE_WINDOW_SECONDS = 900
    cache.clear()
    yield
    cache.clear()


def _at(ip: str) -> Client:
    return Client(REMOTE_ADDR=ip)


def _login(client: Client, email: str, password: str = PASSWORD):  # type: ignore[no-untyped-def]
    return client.post(LOGIN, {"username": email, "password": password})


def _without_csrf(body: bytes) -> bytes:
    return CSRF.sub(b"", body)


def _guess_from_many_addresses(email: str, count: int) -> None:
    for n in range(count):  # one wrong password from each address: no pair ever reaches its limit
        assert _login(_at(f"198.51.100.{n + 1}"), email, "wrong password").status_code == 200


# --- one account, many addresses ------------------------------------------------------------------------


def test_one_account_guessed_from_many_addresses_is_locked_everywhere(merchant):
    _guess_from_many_addresses("owner@acme.test", 8)

    owner = _login(_at("203.0.113.50"), "owner@acme.test")

    assert owner.status_code == 429
    assert b"Too many failed log-in attempts" in owner.content
    assert "_auth_user_id" not in owner.client.session


def test_a_locked_account_answers_the_right_and_a_wrong_password_alike(merchant):
    _guess_from_many_addresses("owner@acme.test", 8)

    right = _login(_at("203.0.113.50"), "owner@acme.test")
    wrong = _login(_at("203.0.113.51"), "owner@acme.test", "wrong password")

    assert right.status_code == wrong.status_code == 429
    assert _without_csrf(right.content) == _without_csrf(wrong.content)


def test_an_unknown_account_locks_like_a_real_one(merchant):
    _guess_from_many_addresses("nobody@acme.test", 8)
    _guess_from_many_addresses("owner@acme.test", 8)

    unknown = _login(_at("203.0.113.50"), "nobody@acme.test", "wrong password")
    real = _login(_at("203.0.113.51"), "owner@acme.test", "wrong password")

    assert unknown.status_code == real.status_code == 429
    assert _without_csrf(unknown.content).replace(b"nobody", b"owner") == _without_csrf(real.content)


def test_below_the_account_limit_the_owner_logs_in(merchant):
    _guess_from_many_addresses("owner@acme.test", 7)

    assert _login(_at("203.0.113.50"), "owner@acme.test").status_code == 302


def test_a_password_reset_ends_the_account_lock(merchant):
    _guess_from_many_addresses("owner@acme.test", 8)
    owner = _at("203.0.113.50")
    assert _login(owner, "owner@acme.test").status_code == 429

    owner.post(RESET, {"email": "owner@acme.test"})
    link = re.search(r"https?://[^/]+(/dashboard/password-reset/\S+/\S+/)", mail.outbox[-1].body)
    assert link
    form = owner.get(link.group(1), follow=True)
    owner.post(form.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})

    assert _login(_at("203.0.113.60"), "owner@acme.test", NEW_PASSWORD).status_code == 302


def test_the_account_lock_ends_with_its_window(merchant, monkeypatch):
    start = time.time()
    monkeypatch.setattr(throttle, "_now", lambda: start)
    _guess_from_many_addresses("owner@acme.test", 8)
    assert _login(_at("203.0.113.50"), "owner@acme.test").status_code == 429

    monkeypatch.setattr(throttle, "_now", lambda: start + 900)

    assert _login(_at("203.0.113.50"), "owner@acme.test").status_code == 302


# --- one address, many accounts -------------------------------------------------------------------------


def test_one_password_sprayed_over_many_accounts_locks_the_address(merchant):
    sprayer = _at("203.0.113.7")
    for n in range(12):
        assert _login(sprayer, f"user{n}@acme.test", "Summer2026!").status_code == 200

    from_there = _login(sprayer, "owner@acme.test")
    from_elsewhere = _login(_at("198.51.100.20"), "owner@acme.test")

    assert from_there.status_code == 429
    assert b"Too many failed log-in attempts" in from_there.content
    assert from_elsewhere.status_code == 302


def test_logging_in_to_an_own_account_does_not_reset_the_address_count(merchant, other_merchant):
    sprayer = _at("203.0.113.7")
    for n in range(11):
        _login(sprayer, f"user{n}@acme.test", "Summer2026!")
    assert _login(sprayer, "owner@other.test").status_code == 302  # the attacker's own account
    sprayer.post("/dashboard/logout/")

    _login(sprayer, "user11@acme.test", "Summer2026!")

    assert _login(sprayer, "owner@acme.test").status_code == 429


# --- password reset -------------------------------------------------------------------------------------


def test_reset_mails_one_address_at_most_its_budget_and_always_says_the_same(merchant, settings):
    settings.DASHBOARD_MAIL_ADDRESS_LIMIT = 3
    answers = [_at(f"198.51.100.{n}").post(RESET, {"email": "owner@acme.test"}) for n in range(1, 6)]

    assert [answer.status_code for answer in answers] == [302] * 5
    assert {answer["Location"] for answer in answers} == {"/dashboard/password-reset/sent/"}
    assert len(mail.outbox) == 3


def test_reset_for_an_address_without_account_answers_byte_for_byte_the_same(merchant):
    known = _at("198.51.100.1").post(RESET, {"email": "owner@acme.test"})
    unknown = _at("198.51.100.2").post(RESET, {"email": "nobody@acme.test"})

    assert (known.status_code, known["Location"], known.content) == (
        unknown.status_code,
        unknown["Location"],
        unknown.content,
    )
    assert [message.to for message in mail.outbox] == [["owner@acme.test"]]


def test_reset_requests_from_one_address_are_limited(merchant, settings):
    settings.DASHBOARD_PASSWORD_RESET_IP_LIMIT = 2
    flooder = _at("203.0.113.7")
    answers = [flooder.post(RESET, {"email": f"victim{n}@acme.test"}) for n in range(2)]

    refused = flooder.post(RESET, {"email": "owner@acme.test"})
    elsewhere = _at("198.51.100.20").post(RESET, {"email": "owner@acme.test"})

    assert [answer.status_code for answer in answers] == [302, 302]
    assert refused.status_code == 429
    assert b"Too many reset requests" in refused.content
    assert elsewhere.status_code == 302
    assert [message.to for message in mail.outbox] == [["owner@acme.test"]]


# --- the Django admin -----------------------------------------------------------------------------------


@pytest.fixture
def staff(db):  # type: ignore[no-untyped-def]
    return UserFactory(email="root@kassa.test", is_staff=True, is_superuser=True)


def _admin_login(client: Client, username: str, password: str = PASSWORD, code: str = ""):  # type: ignore[no-untyped-def]
    return client.post(
        ADMIN_LOGIN, {"username": username, "password": password, "code": code, "next": "/admin/"}
    )


@pytest.fixture
def reload_urls():  # type: ignore[no-untyped-def]
    """The admin's URLs are decided when the URLconf loads (ADMIN_ENABLED is read at start-up)."""
    import config.urls

    def reload() -> None:
        importlib.reload(config.urls)
        clear_url_caches()

    yield reload
    reload()


def test_the_admin_is_404_when_disabled(settings, staff, reload_urls):
    settings.ADMIN_ENABLED = False
    reload_urls()

    client = _at("198.51.100.1")
    client.force_login(staff)
    pages = [
        client.get("/admin/"),
        client.get(ADMIN_LOGIN),
        _admin_login(_at("198.51.100.2"), "root@kassa.test"),
    ]
    settings.ADMIN_ENABLED = True

    assert [page.status_code for page in pages] == [404, 404, 404]


def test_the_admin_logs_staff_in_with_the_password(staff):
    response = _admin_login(_at("198.51.100.1"), "root@kassa.test")

    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_the_admin_log_in_counts_in_the_dashboard_counters(staff):
    guesser = _at("203.0.113.7")
    for _ in range(3):
        assert _admin_login(guesser, "root@kassa.test", "wrong").status_code == 200
    for _ in range(2):
        assert _login(guesser, "root@kassa.test", "wrong").status_code == 200

    at_admin = _admin_login(guesser, "root@kassa.test")
    on_dashboard = _login(guesser, "root@kassa.test")

    assert at_admin.status_code == 429
    assert b"Too many failed log-in attempts" in at_admin.content
    assert on_dashboard.status_code == 429


def test_the_admin_refuses_a_merchant_as_it_refuses_a_wrong_password(merchant, staff):
    merchant_answer = _admin_login(_at("198.51.100.1"), "owner@acme.test")
    wrong_answer = _admin_login(_at("198.51.100.2"), "owner@acme.test", "wrong")

    assert merchant_answer.status_code == wrong_answer.status_code == 200
    assert b"for a staff account" in merchant_answer.content
    assert _without_csrf(merchant_answer.content) == _without_csrf(wrong_answer.content)


@pytest.fixture
def staff_with_code(staff, monkeypatch):  # type: ignore[no-untyped-def]
    now = 1_800_000_000.0
    monkeypatch.setattr(totp, "_now", lambda: now)
    device = TotpDeviceFactory(user=staff)
    return pyotp.TOTP(device.secret).at(now)


def test_the_admin_asks_a_user_with_an_authenticator_for_the_code(staff, staff_with_code):
    client = _at("198.51.100.1")

    without = _admin_login(client, "root@kassa.test")
    wrong = _admin_login(
        client, "root@kassa.test", code="000000" if staff_with_code != "000000" else "111111"
    )
    right = _admin_login(client, "root@kassa.test", code=staff_with_code)

    assert without.status_code == wrong.status_code == 200
    assert _without_csrf(without.content) == _without_csrf(
        _admin_login(_at("198.51.100.2"), "root@kassa.test", "wrong password").content
    )
    assert right.status_code == 302 and right["Location"] == "/admin/"


def test_wrong_admin_codes_lock_like_wrong_passwords(staff, staff_with_code):
    client = _at("198.51.100.1")
    for _ in range(5):
        _admin_login(client, "root@kassa.test", code="999999" if staff_with_code != "999999" else "888888")

    response = _admin_login(client, "root@kassa.test", code=staff_with_code)

    assert response.status_code == 429
