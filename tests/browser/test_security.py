"""Account security in a real browser: a merchant turns on two-factor authentication with a code computed
here from the secret the page shows (and its QR code), logs out, logs in with password and code, gets
the step-up page when rotating the API token without a fresh confirmation (the token stays), confirms there
and the token is rotated at once (the new token shown once), and reads the audit log.
Screenshots: security-desktop-*.png.

The authenticator's clock is the test's (security.totp._now, shared with the live server's thread): the
login code is the next 30-second step's, without waiting for it.
"""

from __future__ import annotations

import re

import pyotp
import pytest
from playwright.sync_api import expect

from payments.models import Company
from security import totp
from security.models import AuditEvent
from tests.browser.helpers import decode_qr

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "owner@roastery.test"
PASSWORD = "a long sandbox passphrase"


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_merchant_enrols_2fa_logs_in_with_a_code_and_steps_up_to_rotate(
    open_page, live_server, shot, monkeypatch
):
    from tests.factories import MerchantFactory

    credentials = MerchantFactory(name="Blue Bottle Roastery", email=EMAIL, password=PASSWORD)
    clock = _Clock(totp._now())
    monkeypatch.setattr(totp, "_now", clock)
    base = live_server.url
    page = open_page("desktop")

    def picture(step: str) -> None:
        page.wait_for_load_state()  # styles and script applied: a click returns before the page loaded
        shot(page, "security", "desktop", step)

    page.on("dialog", lambda dialog: dialog.accept())  # the "Rotate token?" confirmation

    # Log in with the password only; turn on 2FA (after confirming the password: a step-up).
    page.goto(f"{base}/dashboard/login/")
    page.get_by_label("E-mail").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    page.get_by_role("link", name="Security").click()
    expect(page.get_by_test_id("twofa-status")).to_contain_text("Off")
    page.get_by_role("link", name="Turn on").click()
    expect(page.get_by_role("heading", name="Confirm it's you")).to_be_visible()
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Confirm").click()

    expect(page.get_by_role("heading", name="Turn on two-factor authentication")).to_be_visible()
    secret = page.get_by_test_id("totp-secret").get_attribute("data-secret") or ""
    assert re.fullmatch(r"[A-Z2-7]{32}", secret)
    assert page.get_by_test_id("totp-secret").inner_text().replace(" ", "") == secret
    uri = decode_qr(page.locator("svg.qr-code").screenshot())
    assert len(uri) == 1 and pyotp.parse_uri(uri[0]).secret == secret
    picture("enrol")
    page.get_by_label("Code from your app").fill(pyotp.TOTP(secret).at(clock()))
    page.get_by_role("button", name="Turn on").click()

    codes = page.get_by_test_id("recovery-codes").locator("li").all_inner_texts()
    assert len(codes) == 10
    picture("recovery-codes")
    page.get_by_role("link", name="I have stored them").click()
    expect(page.get_by_test_id("twofa-status")).to_contain_text("On")

    # Log out; the password alone no longer logs in: the code page asks for the next code.
    page.get_by_role("button", name="Log out").click()
    page.get_by_label("E-mail").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
    picture("login-code")
    clock.now += totp.INTERVAL  # the enrolment's code is spent; the app shows the next one
    page.get_by_label("Authenticator code").fill(pyotp.TOTP(secret).at(clock()))
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()

    # Rotating the token without a fresh step-up: the step-up page in its place, and the token unchanged.
    token_hash = Company.objects.get(pk=credentials.company.pk).token_hash
    page.get_by_role("link", name="API & webhooks").click()
    page.get_by_role("button", name="Rotate token").click()
    expect(page.get_by_role("heading", name="Confirm it's you")).to_be_visible()
    assert page.url.endswith("/dashboard/settings/api/token/rotate/")
    assert Company.objects.get(pk=credentials.company.pk).token_hash == token_hash
    picture("step-up")

    # Confirmed (the password, offered beside the code): the rotation is done at once, the new token shown.
    page.get_by_label("Password or authenticator code").fill(PASSWORD)
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("heading", name="API & webhooks")).to_be_visible()
    expect(page.get_by_text("A new public token was issued. The old one no longer works.")).to_be_visible()
    picture("token-rotated")
    new_token = page.get_by_test_id("public-token").inner_text().strip()
    assert new_token.startswith("kassa_pk_") and new_token != credentials.public_token
    assert Company.objects.get(pk=credentials.company.pk).token_hash != token_hash
    page.reload()
    assert new_token not in page.content()

    # The audit log tells the story, newest first.
    page.get_by_role("link", name="Security").click()
    page.get_by_role("link", name="Open the audit log").click()
    log = page.get_by_test_id("audit-log")
    expect(log).to_contain_text("API token rotated")
    actions = [row.get_attribute("data-action") for row in log.locator("tbody tr").all()]
    assert actions[:3] == ["token.rotate", "stepup.confirm", "login.success"]
    assert {"2fa.enable", "logout", "stepup.confirm"} <= set(actions)
    assert "127.0.0.1" in log.inner_text()
    assert AuditEvent.objects.filter(company=credentials.company, action="login.success").count() == 2
    picture("audit-log")
