"""Production mails through a real server or not at all: never a reset or sign-up link in the log
(kassa.E011).

Without EMAIL_URL production fell back to the console backend, and the web log held working password-reset
and sign-up links. Now a backend that keeps mail on the machine is refused at start, and `EMAIL_URL=off`
turns e-mail off on purpose: the pages that would mail a link say to ask the operator and send nothing.
"""

from __future__ import annotations

import logging

import pytest
from django.core import mail
from django.core.cache import cache
from django.test import Client

from payments.checks import check_mail
from tests.test_production_settings import assert_refused, check_deploy, production_env

CONSOLE = "django.core.mail.backends.console.EmailBackend"


def test_production_refuses_to_start_without_a_mail_server(tmp_path):
    unset = check_deploy(production_env(tmp_path, EMAIL_URL=None))
    console = check_deploy(production_env(tmp_path, EMAIL_URL=None, EMAIL_BACKEND=CONSOLE))

    assert_refused(unset, "kassa.E011", "EMAIL_URL")
    assert_refused(console, "kassa.E011", "EMAIL_URL")


def test_production_starts_with_e_mail_turned_off_on_purpose(tmp_path):
    result = check_deploy(production_env(tmp_path, EMAIL_URL="off"))

    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", ["console", "filebased", "locmem", "dummy"])
def test_every_backend_that_keeps_mail_on_the_machine_is_refused(settings, name):
    settings.EMAIL_BACKEND = f"django.core.mail.backends.{name}.EmailBackend"

    assert [error.id for error in check_mail()] == ["kassa.E011"]


@pytest.mark.parametrize(
    ("enabled", "backend"),
    [
        (True, "django.core.mail.backends.smtp.EmailBackend"),
        (True, "anymail.backends.mailgun.EmailBackend"),  # a mail service's own backend: the operator's call
        (False, "django.core.mail.backends.dummy.EmailBackend"),  # EMAIL_URL=off
    ],
)
def test_a_real_backend_or_e_mail_off_passes(settings, enabled, backend):
    settings.EMAIL_ENABLED, settings.EMAIL_BACKEND = enabled, backend

    assert check_mail() == []


def _mail_in(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Log lines holding a mail or a link: an absolute URL, a subject line."""
    lines = [record.getMessage() for record in caplog.records]
    return [line for line in lines if "://" in line or "Subject:" in line]


@pytest.fixture
def mail_off(settings, db):  # type: ignore[no-untyped-def]
    """E-mail off as EMAIL_URL=off sets it; the test backend stays: any mail sent would be in the outbox."""
    settings.EMAIL_ENABLED = False
    cache.clear()
    yield settings
    cache.clear()


def test_with_e_mail_off_the_reset_page_says_to_ask_the_operator_and_sends_nothing(
    mail_off, merchant, caplog
):
    client = Client()

    page = client.get("/dashboard/password-reset/")
    with caplog.at_level(logging.DEBUG):
        posted = client.post("/dashboard/password-reset/", {"email": "owner@acme.test"})

    assert page.status_code == posted.status_code == 200
    for response in (page, posted):
        assert b"Ask the operator" in response.content
        assert b'name="email"' not in response.content  # no form to fill in vain
    assert mail.outbox == []
    assert not _mail_in(caplog)


def test_with_e_mail_off_sign_up_says_to_ask_the_operator_and_sends_nothing(mail_off, caplog):
    client = Client()
    body = {
        "name": "Roastery",
        "email": "owner@roastery.test",
        "password1": "a long passphrase",
        "password2": "a long passphrase",
    }

    page = client.get("/dashboard/signup/")
    with caplog.at_level(logging.DEBUG):
        posted = client.post("/dashboard/signup/", body)

    assert page.status_code == posted.status_code == 200
    for response in (page, posted):
        assert b"Ask the operator" in response.content
        assert b'name="password1"' not in response.content
    assert mail.outbox == []
    assert not _mail_in(caplog)


def test_with_e_mail_on_the_pages_mail_as_before(merchant, db):
    cache.clear()
    client = Client()

    client.post("/dashboard/password-reset/", {"email": "owner@acme.test"})

    assert len(mail.outbox) == 1 and "/dashboard/password-reset/" in mail.outbox[0].body
