"""Dashboard payouts in a real browser: a confirmation page with the totals, the step-up asked for on it,
one payout per confirmation however it is resubmitted (back and submit again, a double click, two requests
at once, a second tab), and a payout to a new address held by the cool-down with its time.

Screenshots: test-artifacts/screenshots/payouts-desktop-*.png (the confirmation page, the sent page, the
held withdrawal, the payout policy page).
"""

from __future__ import annotations

import os
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from tests.chain import fund
from tests.factories import MerchantFactory, PayoutPolicyFactory
from withdrawals.models import Withdrawal

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs in the test's thread

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "owner@payouts.test"
PASSWORD = "a long payout passphrase"
BTC = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
NEW_BTC = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"


@pytest.fixture
def company(db):  # type: ignore[no-untyped-def]
    credentials = MerchantFactory(name="Payout Roastery", email=EMAIL, password=PASSWORD)
    fund(credentials.company, "btc", "0.1")
    return credentials.company


def _log_in(page, base: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base}/dashboard/login/")
    page.get_by_label("E-mail").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()


def _review(page, base: str, amount: str, to: str = BTC) -> str:  # type: ignore[no-untyped-def]
    """Fill in the single form and go to its confirmation page; returns that page's address."""
    page.goto(f"{base}/dashboard/withdrawals/new/")
    page.get_by_label("Asset").select_option("btc")
    page.get_by_label("To address").fill(to)
    page.get_by_label("Amount").fill(amount)
    page.get_by_role("button", name="Review withdrawal").click()
    expect(page.get_by_role("heading", name="Confirm and send")).to_be_visible()
    assert "/dashboard/withdrawals/confirm/" in page.url
    return str(page.url)


def _count(amount: str) -> int:
    return Withdrawal.objects.filter(amount=Decimal(amount)).count()


def test_a_payout_is_sent_once_after_the_step_up_on_its_confirmation_page(
    open_page, live_server, shot, company
):
    page = open_page("desktop")
    base = live_server.url
    _log_in(page, base)

    # The confirmation page: the item, its fee and the total per asset; nothing held yet.
    confirm = _review(page, base, "0.005")
    expect(page.get_by_test_id("total-btc")).to_have_text("0.0051 btc")
    assert BTC in page.get_by_test_id("confirm-items").inner_text()
    assert not Withdrawal.objects.exists()
    page.wait_for_load_state()  # the stylesheet too: a full-page shot measures the page first
    shot(page, "payouts", "desktop", "confirm")

    # Refused without the step-up (nothing typed, then a wrong password), sent with it.
    send = page.get_by_role("button", name="Send 1 withdrawal")
    send.click()
    expect(page.get_by_text("Enter your password or a code from your authenticator app")).to_be_visible()
    page.get_by_label("Your password or authenticator code").fill("not the password")
    page.get_by_role("button", name="Send 1 withdrawal").click()
    expect(page.get_by_text("That is not your password or a current authenticator code.")).to_be_visible()
    assert not Withdrawal.objects.exists()
    page.get_by_label("Your password or authenticator code").fill(PASSWORD)
    page.get_by_role("button", name="Send 1 withdrawal").click()
    expect(page.get_by_test_id("sent")).to_be_visible()
    assert "1 withdrawal accepted" in page.content()
    assert _count("0.005") == 1
    page.wait_for_load_state()  # the stylesheet too: a full-page shot measures the page first
    shot(page, "payouts", "desktop", "sent")

    # Back, and submit again if the browser shows the form again: still one payout, the same result.
    page.go_back()
    resend = page.get_by_role("button", name="Send 1 withdrawal")
    if resend.count():
        resend.click()
    expect(page.get_by_test_id("sent")).to_be_visible()
    assert page.url == confirm
    assert _count("0.005") == 1

    # A second tab opened on a confirmation page before it was sent: its submission sends nothing more.
    second = _review(page, base, "0.002")
    tab = page.context.new_page()
    tab.goto(second)
    page.get_by_role("button", name="Send 1 withdrawal").click()  # fresh now: no secret asked
    expect(page.get_by_test_id("sent")).to_be_visible()
    tab.get_by_role("button", name="Send 1 withdrawal").click()
    expect(tab.get_by_test_id("sent")).to_be_visible()
    assert _count("0.002") == 1

    # Two quick submits: a double click on the button, and two requests of the form at the same moment.
    _review(page, base, "0.003")
    page.get_by_role("button", name="Send 1 withdrawal").dblclick()
    expect(page.get_by_test_id("sent")).to_be_visible()
    assert _count("0.003") == 1
    _review(page, base, "0.004")
    statuses = page.evaluate(
        """() => {
            const form = document.querySelector('[data-testid="confirm-form"]');
            const post = () => fetch(form.action, {method: "POST", body: new FormData(form)});
            return Promise.all([post(), post()]).then((answers) => answers.map((a) => a.status));
        }"""
    )
    assert statuses == [200, 200]  # both end on the page of what was sent
    assert _count("0.004") == 1
    assert Withdrawal.objects.count() == 4


def test_a_payout_to_a_new_address_is_held_with_its_time(open_page, live_server, shot, company):
    PayoutPolicyFactory(company=company, cooldown_hours=24)
    page = open_page("desktop")
    base = live_server.url
    _log_in(page, base)

    _review(page, base, "0.01", to=NEW_BTC)
    items = page.get_by_test_id("confirm-items").inner_text()
    assert "will be held" in items and "new address: sent after" in items
    page.get_by_label("Your password or authenticator code").fill(PASSWORD)
    page.get_by_role("button", name="Send 1 withdrawal").click()
    expect(page.get_by_test_id("sent")).to_be_visible()

    withdrawal = Withdrawal.objects.get()
    until = withdrawal.hold_until.strftime("%Y-%m-%d %H:%M")
    page.get_by_role("link", name=withdrawal.uid).click()
    section = page.get_by_test_id("hold-section")
    expect(section).to_contain_text(f"new address, until {until} UTC")
    expect(section.get_by_role("button", name="Cancel withdrawal")).to_be_visible()
    page.wait_for_load_state()  # the stylesheet too: a full-page shot measures the page first
    shot(page, "payouts", "desktop", "held")
    page.goto(f"{base}/dashboard/withdrawals/")
    expect(page.get_by_test_id("hold").first).to_be_visible()
    assert f"until {until} UTC" in page.content()
    page.goto(f"{base}/dashboard/withdrawals/policy/")
    expect(page.get_by_label("New-address cool-down (hours)")).to_have_value("24")
    page.wait_for_load_state()  # the stylesheet too: a full-page shot measures the page first
    shot(page, "payouts", "desktop", "policy")
