"""The API tokens page in a real browser: from API & webhooks, create a scoped token (after the step-up),
copy it from its one showing, use it, revoke it; screenshots at desktop and phone size
(test-artifacts/screenshots/api-tokens-*.png)."""

from __future__ import annotations

import os

import pytest
import requests
from playwright.sync_api import expect

from payments.models import ApiToken

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs in the test's thread

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "owner@roastery.test"
PASSWORD = "a long sandbox passphrase"


def test_merchant_creates_uses_and_revokes_a_scoped_token(open_page, live_server, shot):
    from tests.factories import MerchantFactory

    MerchantFactory(name="Blue Bottle Roastery", email=EMAIL, password=PASSWORD)
    base = live_server.url
    page = open_page("desktop")
    page.on("dialog", lambda dialog: dialog.accept())  # the "Revoke …?" confirmation

    page.goto(f"{base}/dashboard/login/")
    page.get_by_label("E-mail").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("link", name="API & webhooks").click()
    page.get_by_test_id("api-tokens-link").click()
    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
    expect(page.get_by_test_id("company-token")).to_contain_text("every scope")

    # Create: the step-up page first (nothing made yet), then the token as typed, at once.
    page.get_by_label("Name").fill("reporting job")
    page.get_by_label("balances:read").check()
    page.get_by_label("Allowed client networks").fill("127.0.0.1\n::1")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_role("heading", name="Confirm it's you")).to_be_visible()
    assert not ApiToken.objects.exists()
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()

    secret = page.get_by_test_id("api-token-secret").inner_text().strip()
    assert secret.startswith("kassa_tk_")
    page.wait_for_load_state()
    shot(page, "api-tokens", "desktop", "created")
    headers = {"Authorization": f"Bearer {secret}"}
    assert requests.get(f"{base}/api/company/balances", headers=headers, timeout=10).status_code == 200
    refused = requests.get(f"{base}/api/invoices/v1/regular", headers=headers, timeout=10)
    assert refused.status_code == 403 and "invoices:read" in refused.json()["detail"]

    page.reload()
    assert secret not in page.content()
    row = page.get_by_test_id("api-token-row").filter(has_text="reporting job")
    expect(row).to_contain_text("127.0.0.1/32")
    expect(row).not_to_contain_text("never")  # it was just used

    # Revoke (the step-up is still fresh): refused by the API at once.
    row.get_by_role("button", name="Revoke").click()
    expect(page.get_by_test_id("api-token-row").filter(has_text="reporting job")).to_contain_text("revoked")
    assert requests.get(f"{base}/api/company/balances", headers=headers, timeout=10).status_code == 401
    shot(page, "api-tokens", "desktop", "revoked")

    phone = open_page("phone")
    phone.context.add_cookies(page.context.cookies())
    phone.goto(f"{base}/dashboard/settings/api/tokens/")
    expect(phone.get_by_role("heading", name="API tokens")).to_be_visible()
    shot(phone, "api-tokens", "phone", "list")
