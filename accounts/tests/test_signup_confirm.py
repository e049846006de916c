"""Sign-up confirmed by e-mail (accounts/signup.py): the same answer for a new and a taken address, a signed
link that works once for 24 hours and asks for the chosen password, budgets, and DASHBOARD_SIGNUP."""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.core import mail, signing
from django.core.cache import cache
from django.test import Client

from accounts.signup import SignupLinkInvalid, signup_confirm, signup_pending
from payments.models import Company

pytestmark = pytest.mark.django_db

SIGNUP = "/dashboard/signup/"
PASSWORD = "a long sandbox passphrase"
CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"')


@pytest.fixture(autouse=True)
def fresh_cache():  # type: ignore[no-untyped-def]
    cache.clear()  # pending sign-ups and the budgets live there
    yield
    cache.clear()


def _signup(client: Client, email: str = "owner@roastery.test", password: str = PASSWORD):  # type: ignore[no-untyped-def]
    body = {"name": "Roastery", "email": email, "password1": password, "password2": password}
    return client.post(SIGNUP, body)


def _link(index: int = -1) -> str:
    match = re.search(r"https?://[^/]+(/dashboard/signup/confirm/(\S+)/)", mail.outbox[index].body)
    assert match, mail.outbox[index].body
    return match.group(1)


def _token(link: str) -> str:
    return link.rstrip("/").rsplit("/", 1)[1]


def test_a_new_and_a_taken_address_get_the_same_answer(merchant):
    new_client, taken_client = Client(REMOTE_ADDR="198.51.100.1"), Client(REMOTE_ADDR="198.51.100.2")

    new = _signup(new_client, "owner@acme.tesu")  # as long as the taken one: the pages echo it
    taken = _signup(taken_client, "owner@acme.test")
    new_page = new_client.get(new["Location"])
    taken_page = taken_client.get(taken["Location"])

    assert (new.status_code, new["Location"], new.content) == (
        taken.status_code,
        taken["Location"],
        taken.content,
    )
    assert new_page.status_code == taken_page.status_code == 200
    assert new_page.content.replace(b"acme.tesu", b"acme.test") == taken_page.content
    assert b"We sent a link to" in taken_page.content


def test_the_two_mails_differ_only_in_what_the_owner_of_the_address_reads(merchant):
    _signup(Client(), "new@roastery.test")
    _signup(Client(), "owner@acme.test")

    new_mail, taken_mail = mail.outbox
    assert new_mail.to == ["new@roastery.test"] and "/dashboard/signup/confirm/" in new_mail.body
    assert taken_mail.to == ["owner@acme.test"] and "/dashboard/signup/confirm/" not in taken_mail.body
    assert "/dashboard/login/" in taken_mail.body and "/dashboard/password-reset/" in taken_mail.body
    assert Company.objects.count() == 1


def test_the_link_carries_no_password_and_nothing_is_created_before_it_is_followed(db):
    _signup(Client())

    link = _link()
    assert PASSWORD not in mail.outbox[0].body and PASSWORD not in link
    pending = signup_pending(token=_token(link))
    assert pending is not None and pending.email == "owner@roastery.test"
    assert PASSWORD not in pending.password_hash
    assert not get_user_model().objects.exists()


def test_opening_the_link_only_asks_for_the_password(db):
    client = Client()
    _signup(client)

    page = client.get(_link())

    assert page.status_code == 200
    assert b"Roastery" in page.content and b"owner@roastery.test" in page.content
    assert not Company.objects.exists()


def test_the_link_with_the_chosen_password_creates_the_merchant_and_shows_the_token_once(db):
    client = Client()
    _signup(client)

    response = client.post(_link(), {"password": PASSWORD})

    assert response.status_code == 302 and response["Location"] == "/dashboard/welcome/"
    company = Company.objects.get(owner__username="owner@roastery.test")
    assert company.name == "Roastery"
    assert company.owner.check_password(PASSWORD)
    assert b"kassa_pk_" in client.get("/dashboard/welcome/").content


def test_a_wrong_password_creates_nothing_and_keeps_the_link(db):
    client = Client()
    _signup(client)

    wrong = client.post(_link(), {"password": "not what was chosen"})
    right = client.post(_link(), {"password": PASSWORD})

    assert wrong.status_code == 200 and b"not the password you chose" in wrong.content
    assert right.status_code == 302
    assert Company.objects.count() == 1


def test_wrong_passwords_on_the_link_are_throttled(db):
    client = Client()
    _signup(client)
    for _ in range(5):
        client.post(_link(), {"password": "guess"})

    response = client.post(_link(), {"password": PASSWORD})

    assert response.status_code == 429
    assert not Company.objects.exists()


def test_the_link_works_once(db):
    _signup(Client())
    link = _link()
    first = Client().post(link, {"password": PASSWORD})

    second = Client().post(link, {"password": PASSWORD})

    assert first.status_code == 302
    assert second.status_code == 200 and b"This link no longer works" in second.content
    assert Company.objects.count() == 1
    with pytest.raises(SignupLinkInvalid):
        signup_confirm(token=_token(link), password=PASSWORD)


def test_the_link_expires_after_24_hours(db, monkeypatch):
    _signup(Client())
    link = _link()
    signed_at = time.time()

    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: signed_at + 24 * 3600 - 5))
    still = Client().get(link)
    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: signed_at + 24 * 3600 + 5))
    expired = Client().post(link, {"password": PASSWORD})

    assert b"Confirm your merchant account" in still.content
    assert b"This link no longer works" in expired.content
    assert not Company.objects.exists()


@pytest.mark.parametrize(
    "mangle",
    [
        lambda token: token[:-1] + ("A" if token[-1] != "A" else "B"),  # the signature
        lambda token: "x" + token,  # the id
        lambda token: signing.TimestampSigner(salt="another.salt").sign(token.split(":")[0]),
        lambda token: "not-a-token",
        lambda token: "a" * 5000,
    ],
)
def test_a_forged_link_is_refused(db, mangle):
    _signup(Client())
    token = mangle(_token(_link()))

    page = Client().get(f"/dashboard/signup/confirm/{token}/")
    post = Client().post(f"/dashboard/signup/confirm/{token}/", {"password": PASSWORD})

    assert page.status_code == post.status_code == 200
    assert b"This link no longer works" in page.content and b"This link no longer works" in post.content
    assert not Company.objects.exists()


def test_an_address_that_got_an_account_since_makes_the_link_void(db):
    from tests.factories import MerchantFactory

    _signup(Client())
    MerchantFactory(email="owner@roastery.test")

    response = Client().post(_link(), {"password": PASSWORD})

    assert b"This link no longer works" in response.content
    assert Company.objects.count() == 1


def test_sign_ups_from_one_address_are_limited(db, settings):
    settings.DASHBOARD_SIGNUP_IP_LIMIT = 2
    client = Client(REMOTE_ADDR="203.0.113.7")
    answers = [_signup(client, f"shop{n}@roastery.test") for n in range(2)]

    refused = _signup(client, "shop9@roastery.test")
    elsewhere = _signup(Client(REMOTE_ADDR="198.51.100.20"), "shop9@roastery.test")

    assert [answer.status_code for answer in answers] == [302, 302]
    assert refused.status_code == 429 and b"Too many sign-ups" in refused.content
    assert elsewhere.status_code == 302
    assert len(mail.outbox) == 3


def test_one_address_gets_at_most_its_mail_budget_whatever_the_sign_ups(merchant, settings):
    settings.DASHBOARD_MAIL_ADDRESS_LIMIT = 3
    for n in range(5):
        assert _signup(Client(REMOTE_ADDR=f"198.51.100.{n + 1}"), "owner@acme.test").status_code == 302
    for n in range(5):
        Client(REMOTE_ADDR=f"198.51.101.{n + 1}").post(
            "/dashboard/password-reset/", {"email": "owner@acme.test"}
        )

    assert len(mail.outbox) == 3


def test_bad_input_sends_nothing(db):
    response = _signup(Client(), "not-an-email")

    assert response.status_code == 200
    assert mail.outbox == []


# --- DASHBOARD_SIGNUP=false ----------------------------------------------------------------------------


def test_with_signup_off_the_pages_and_links_are_404_and_the_login_page_links_nowhere(settings, db):
    _signup(Client())
    link = _link()
    settings.DASHBOARD_SIGNUP = False

    pages = [
        Client().get(SIGNUP),
        _signup(Client(), "other@roastery.test"),
        Client().get("/dashboard/signup/sent/"),
        Client().get(link),
        Client().post(link, {"password": PASSWORD}),
    ]
    login = Client().get("/dashboard/login/")

    assert [page.status_code for page in pages] == [404] * 5
    assert b"/dashboard/signup/" not in login.content
    assert not Company.objects.exists()
    assert len(mail.outbox) == 1


def test_with_signup_on_the_login_page_links_to_it(db):
    assert b'href="/dashboard/signup/"' in Client().get("/dashboard/login/").content
