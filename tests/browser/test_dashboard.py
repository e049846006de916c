"""The merchant dashboard in a real browser: a merchant signs up and runs the whole sandbox flow.

Sign up through the mailed link and copy the token, reveal the signing secret, point webhooks at a local
receiver and send a test event, create an invoice, pay it through the sandbox panel, see it done, redeliver
a webhook, set an auto-withdrawal rule, upload a bulk file whose bad line the preview rejects and send the
rest; then every page at desktop (1280x800) and phone (390x844) size, saved as
test-artifacts/screenshots/dashboard-*.png. The client's own step (filling the invoice on the pay page) and
the worker's (delivering webhooks) are done through the services, with tests/factories.py and tests/chain.py
as the pay page tests do.
"""

from __future__ import annotations

import os
import re
from decimal import Decimal

import pytest
import requests
from django.core import mail
from playwright.sync_api import expect

from invoices.models import Invoice
from invoices.services import invoice_fill
from payments.models import Company
from webhooks.delivery import webhook_deliver
from webhooks.models import WebhookEvent
from webhooks.receiver import WebhookReceiver
from withdrawals.models import AutoWithdrawalRule, Withdrawal

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs in the test's thread

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "owner@roastery.test"
PASSWORD = "a long sandbox passphrase"
BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


def _no_sideways_scroll(page) -> None:  # type: ignore[no-untyped-def]
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


def _step_up_inline(page) -> None:  # type: ignore[no-untyped-def]
    """Money pages ask for the password on the page itself unless the session's step-up is still fresh."""
    secret = page.get_by_label("Your password or authenticator code")
    if secret.count():
        secret.fill(PASSWORD)


def _deliver_due(company: Company) -> int:
    """What a worker would do: one attempt for every pending event of the company."""
    sent = 0
    for event in WebhookEvent.objects.filter(company=company, status=WebhookEvent.Status.PENDING).order_by(
        "created_at"
    ):
        if webhook_deliver(event_id=event.pk) is not None:
            sent += 1
    return sent


@pytest.fixture
def receiver(settings):  # type: ignore[no-untyped-def]
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True  # live_server runs in this process: the override applies
    with WebhookReceiver() as hook:
        yield hook


def test_merchant_runs_the_sandbox_flow(open_page, live_server, shot, receiver):
    page = open_page("desktop")
    base = live_server.url

    # Sign up; the mailed link asks for the password again; the token is on the next page, once.
    page.goto(f"{base}/dashboard/signup/")
    shot(page, "dashboard", "desktop", "signup")
    page.get_by_label("Company name").fill("Blue Bottle Roastery")
    page.get_by_label("E-mail").fill(EMAIL)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    assert page.get_by_test_id("signup-sent-to").inner_text() == EMAIL
    link = re.search(r"https?://[^/]+(/dashboard/signup/confirm/\S+/)", mail.outbox[-1].body)
    assert link, mail.outbox[-1].body
    page.goto(f"{base}{link.group(1)}")
    shot(page, "dashboard", "desktop", "signup-confirm")
    page.get_by_label("The password you chose").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    token = page.get_by_test_id("public-token").inner_text().strip()
    assert token.startswith("kassa_pk_")
    shot(page, "dashboard", "desktop", "welcome")
    api = requests.get(
        f"{base}/api/company/balances", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert api.status_code == 200
    company = Company.objects.get(owner__email=EMAIL)

    # Signing secret after confirming the password (the step-up, then the secret at once); webhook URL to the
    # local receiver; a signed test event.
    page.get_by_role("link", name="API & webhooks").click()
    assert token not in page.content()
    page.get_by_role("button", name="Reveal secret").click()
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Confirm").click()
    receiver.secret = page.get_by_test_id("signing-secret").inner_text().strip()
    page.locator("#id_url").fill(receiver.url)
    page.get_by_role("button", name="Save URL").click()
    assert "Webhook URL saved." in page.content()
    page.get_by_role("button", name="Send test event").click()
    result = page.get_by_test_id("test-result")
    assert "Delivered" in result.inner_text() and "HTTP 200" in result.inner_text()
    assert receiver.received[-1].verified is True
    shot(page, "dashboard", "desktop", "api-settings")

    # An invoice with three items (the third row added by the script).
    page.get_by_role("link", name="Invoices").click()
    page.get_by_role("link", name="New invoice").first.click()
    page.get_by_label("Item 1 name").fill("Espresso beans, 1 kg")
    page.get_by_label("Item 1 price").fill("60")
    page.get_by_label("Item 2 name").fill("Pour-over dripper")
    page.get_by_label("Item 2 price").fill("45")
    page.get_by_label("Item 3 name").fill("Welcome discount")
    page.get_by_label("Item 3 price").fill("-5")
    page.get_by_role("button", name="Add item").click()
    page.get_by_label("Item 4 name").fill("Gift wrap")
    page.get_by_label("Item 4 price").fill("0")
    assert page.locator("[data-total-value]").inner_text() == "100.00"
    shot(page, "dashboard", "desktop", "invoice-new")
    page.get_by_role("button", name="Create invoice").click()
    assert "Invoice created." in page.content()
    invoice = Invoice.objects.get(company=company)
    assert [item.name for item in invoice.items.all()][-1] == "Gift wrap"

    # The client picks BTC on the pay page; the merchant pays it on the sandbox chain.
    invoice_fill(invoice_id=invoice.pk, client_email="client@example.com", payment_currency="btc")
    page.reload()
    page.get_by_test_id("sandbox-pay").click()
    assert page.get_by_label("Amount").input_value() == "0.00101"
    page.get_by_role("button", name="Send deposit").click()
    assert "in the mempool" in page.content()
    assert page.get_by_label("Blocks", exact=True).input_value() == "2"
    page.get_by_role("button", name="Mine").click()
    shot(page, "dashboard", "desktop", "sandbox")
    page.goto(f"{base}/dashboard/invoices/{invoice.pk}/")
    assert page.locator("h1 .badge").inner_text().lower() == "done"
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE

    # The worker delivers the invoice's webhooks; the merchant redelivers one.
    assert _deliver_due(company) == 4  # created, pending, processing, done
    page.reload()
    shot(page, "dashboard", "desktop", "invoice-done")
    page.get_by_role("link", name="Webhooks", exact=True).click()
    shot(page, "dashboard", "desktop", "webhooks")
    page.get_by_role("link", name="invoice · done").click()
    page.get_by_role("button", name="Redeliver").click()
    assert "Redelivery queued" in page.content()
    assert _deliver_due(company) == 1
    page.reload()
    assert page.locator(".attempt").count() == 2
    shot(page, "dashboard", "desktop", "webhook-event")
    done_bodies = [r.body for r in receiver.received if b'"status":"done"' in r.body]
    assert len(done_bodies) == 2 and all(r.verified for r in receiver.received)

    # An auto-withdrawal rule, then a bulk file with one bad line: that line is rejected in the preview.
    page.get_by_role("link", name="Withdrawals", exact=True).click()
    page.get_by_role("link", name="Auto-withdrawals").click()
    page.get_by_label("Enable btc").check()
    page.get_by_label("btc threshold").fill("0.5")
    page.get_by_label("btc address").fill(BTC_ADDRESS)
    _step_up_inline(page)
    page.get_by_role("button", name="Save rules").click()
    assert "Auto-withdrawal rules saved." in page.content()
    shot(page, "dashboard", "desktop", "withdrawal-rules")
    rule = AutoWithdrawalRule.objects.get(company=company)
    assert (rule.code, rule.is_enabled, str(rule.amount.normalize())) == ("btc", True, "0.5")

    page.get_by_role("link", name="Bulk upload").click()
    csv_file = f"asset,to,amount,tag\nbtc,{BTC_ADDRESS},0.0005,\nbtc,not-a-bitcoin-address,0.0005,\n"
    page.locator("#id_file").set_input_files(
        {"name": "payouts.csv", "mimeType": "text/csv", "buffer": csv_file.encode()}
    )
    page.get_by_role("button", name="Check the lines").click()
    summary = page.get_by_test_id("bulk-summary").inner_text().lower()
    assert "1 valid" in summary and "1 rejected" in summary
    bad = page.locator('tr[data-line="3"]').inner_text().lower()
    assert "rejected" in bad and "to: not a valid btc address" in bad
    assert not Withdrawal.objects.exists()
    shot(page, "dashboard", "desktop", "withdrawal-bulk-preview")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Send only the 1 valid line").click()
    _step_up_inline(page)  # the confirmation page: the withdrawal, its fee, the total; then it is sent
    page.get_by_role("button", name="Send 1 withdrawal").click()
    assert "1 withdrawal accepted" in page.content()
    withdrawal = Withdrawal.objects.get(company=company)
    assert withdrawal.amount == Decimal("0.0005")
    shot(page, "dashboard", "desktop", "withdrawals")
    page.get_by_role("link", name=withdrawal.uid).click()
    shot(page, "dashboard", "desktop", "withdrawal")

    # A static deposit address for one of the merchant's users.
    page.get_by_role("link", name="Deposit addresses").click()
    page.get_by_label("Your user id").fill("customer-1042")
    page.get_by_label("User e-mail").fill("jane@example.com")
    page.get_by_label("Network").select_option("ton")
    page.get_by_role("button", name="Create address").click()
    assert "Address created for customer-1042" in page.content()
    assert page.locator("table").get_by_text("customer-1042").is_visible()

    # Every other page, then log out.
    for name, path in [
        ("overview", "/dashboard/"),
        ("invoices", "/dashboard/invoices/"),
        ("balances", "/dashboard/balances/"),
        ("ledger", "/dashboard/balances/btc/"),
        ("addresses", "/dashboard/addresses/"),
        ("payment-settings", "/dashboard/settings/payments/"),
        ("withdrawal-new", "/dashboard/withdrawals/new/"),
    ]:
        page.goto(f"{base}{path}")
        shot(page, "dashboard", "desktop", name)
        _no_sideways_scroll(page)
    page.get_by_role("button", name="Log out").click()
    assert page.url.endswith("/dashboard/login/")
    shot(page, "dashboard", "desktop", "login")


def test_phone_layout_and_login(open_page, live_server, shot):
    from tests.browser.helpers import ITEMS
    from tests.factories import InvoiceFactory, MerchantFactory

    credentials = MerchantFactory(name="Blue Bottle Roastery", email=EMAIL, password=PASSWORD)
    invoice = InvoiceFactory(company=credentials.company, items=ITEMS, code="btc", paid="0.00101")
    event = WebhookEvent.objects.filter(company=credentials.company).first()
    assert event is not None
    page = open_page("phone")
    base = live_server.url

    page.goto(f"{base}/dashboard/")
    page.get_by_label("E-mail").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    shot(page, "dashboard", "phone", "login")
    page.get_by_role("button", name="Log in").click()

    expect(page.get_by_role("heading", name="Overview")).to_be_visible()  # waits for the page after login
    expect(page.get_by_role("link", name="Balances")).to_be_hidden()  # behind the menu button
    shot(page, "dashboard", "phone", "overview")
    page.get_by_role("button", name="Menu").click()
    assert page.get_by_role("link", name="Balances").is_visible()
    shot(page, "dashboard", "phone", "menu")
    for name, path in [
        ("invoices", "/dashboard/invoices/"),
        ("invoice", f"/dashboard/invoices/{invoice.pk}/"),
        ("invoice-new", "/dashboard/invoices/new/"),
        ("balances", "/dashboard/balances/"),
        ("webhooks", "/dashboard/webhooks/"),
        ("api-settings", "/dashboard/settings/api/"),
        ("payment-settings", "/dashboard/settings/payments/"),
        ("sandbox", "/dashboard/sandbox/"),
        ("addresses", "/dashboard/addresses/"),
        ("withdrawals", "/dashboard/withdrawals/"),
        ("withdrawal-new", "/dashboard/withdrawals/new/"),
        ("withdrawal-bulk", "/dashboard/withdrawals/bulk/"),
        ("withdrawal-rules", "/dashboard/withdrawals/rules/"),
        ("ledger", "/dashboard/balances/btc/"),
        ("webhook-event", f"/dashboard/webhooks/{event.pk}/"),
        ("password-reset", "/dashboard/password-reset/"),
    ]:
        page.goto(f"{base}{path}")
        shot(page, "dashboard", "phone", name)
        _no_sideways_scroll(page)


def test_forms_work_without_javascript(open_page, live_server, shot):
    from tests.factories import MerchantFactory

    credentials = MerchantFactory(name="Blue Bottle Roastery", email=EMAIL, password=PASSWORD)
    page = open_page("desktop", javascript=False)
    page.goto(f"{live_server.url}/dashboard/login/")
    page.get_by_label("E-mail").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()

    page.goto(f"{live_server.url}/dashboard/invoices/new/")
    assert not page.get_by_role("button", name="Add item").is_visible()
    for number, (name, price) in enumerate([("Beans", "60"), ("Dripper", "45"), ("Discount", "-5")], start=1):
        page.get_by_label(f"Item {number} name").fill(name)
        page.get_by_label(f"Item {number} price").fill(price)
    shot(page, "dashboard", "desktop", "invoice-new-nojs")
    page.get_by_role("button", name="Create invoice").click()

    invoice = Invoice.objects.get(company=credentials.company)
    assert [item.name for item in invoice.items.all()] == ["Beans", "Dripper", "Discount"]
    assert "100.00 USD" in page.content()
