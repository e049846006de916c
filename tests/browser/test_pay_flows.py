"""The pay page as a client and a merchant use it, in Chromium at desktop (1280x800) and phone (390x844) size.

created -> pending -> processing -> done -> redirect; pending -> processing -> wrong; pending -> closed; and
the same page with JavaScript off. Updates must arrive without a reload: a marker set on `window` at the
start has to survive until the end of each flow.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from invoices.models import Invoice
from invoices.payuri import payment_uri
from tests.browser.helpers import ITEMS, decode_qr
from tests.chain import mine
from tests.factories import InvoiceFactory

pytestmark = pytest.mark.django_db(transaction=True)
expect.set_options(timeout=10_000)
VIEWPORTS = ["desktop", "phone"]


def _status(page):  # type: ignore[no-untyped-def]
    return page.locator("#pay-live")


def _mark(page) -> None:  # type: ignore[no-untyped-def]
    page.evaluate("window.kassaMarker = 'no reload'")


def _assert_not_reloaded(page) -> None:  # type: ignore[no-untyped-def]
    assert page.evaluate("window.kassaMarker") == "no reload"


def _fill_form(page, code: str | None) -> None:  # type: ignore[no-untyped-def]
    page.get_by_label("Your e-mail").fill("client@example.com")
    if code:
        page.locator(f"#asset-{code}").check()
    page.get_by_role("button", name="Continue to payment").click()
    expect(_status(page)).to_have_attribute("data-status", "pending")


def _invoice(invoice_id) -> Invoice:  # type: ignore[no-untyped-def]
    return Invoice.objects.select_related("deposit_address").get(pk=invoice_id)


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_created_to_done_then_redirected(open_page, live_server, merchant, shot, viewport):
    target = f"{live_server.url}/healthz"
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, redirect_url=target)
    page = open_page(viewport)
    page.goto(f"{live_server.url}/{invoice.pk}")
    shot(page, "done", viewport, "1-created")

    _fill_form(page, "btc")

    filled = _invoice(invoice.pk)
    uri = payment_uri("btc", address=filled.deposit_address.address, amount=filled.amount_due)
    assert uri.endswith("?amount=0.00101")
    assert decode_qr(page.locator(".qr-code").screenshot()) == [uri]
    clock = page.locator("[data-countdown]")
    expect(clock).to_have_text(re.compile(r"^1:59:\d\d$"))
    first = clock.inner_text()
    expect(clock).not_to_have_text(first)  # ticking
    expect(page.get_by_role("button", name="Copy Address")).to_be_visible()
    expect(page.get_by_text("Network", exact=True)).to_be_visible()
    shot(page, "done", viewport, "2-pending")
    _mark(page)

    page.get_by_role("button", name=re.compile(r"^Pay exact")).click()

    expect(_status(page)).to_have_attribute("data-status", "processing")
    expect(page.locator("#pay-announcer")).to_have_text("Confirming payment")
    expect(page.get_by_text("Confirmations: 0 of 2")).to_be_visible()
    # All of it has arrived: the simulator offers blocks only, never the whole amount again.
    expect(page.get_by_test_id("sandbox-all-arrived")).to_be_visible()
    expect(page.get_by_role("button", name=re.compile(r"^Pay (exact|less|more)"))).to_have_count(0)
    shot(page, "done", viewport, "3-processing")

    page.get_by_role("button", name=re.compile(r"^Mine blocks")).click()

    expect(_status(page)).to_have_attribute("data-status", "done")
    expect(page.get_by_role("heading", name="Payment complete")).to_be_visible()
    expect(page.get_by_role("link", name="Return to Acme Shop")).to_have_attribute("href", target)
    expect(page.locator("[data-redirect-count]")).to_be_visible()
    _assert_not_reloaded(page)
    assert page.title() == "Payment complete · Acme Shop"
    shot(page, "done", viewport, "4-done")
    page.wait_for_url(target)
    assert _invoice(invoice.pk).status == "done"


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_pay_less_then_blocks_leaves_it_wrong(open_page, live_server, merchant, shot, viewport):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, payment_currency="ton")
    page = open_page(viewport)
    page.goto(f"{live_server.url}/{invoice.pk}")
    expect(page.locator('input[name="asset"]')).to_have_count(0)  # the merchant fixed the asset

    _fill_form(page, None)

    tag = _invoice(invoice.pk).deposit_address.tag
    expect(page.locator("#tag")).to_have_text(tag)
    expect(page.get_by_text(f"Required: put {tag} in the comment (memo) field")).to_be_visible()
    assert decode_qr(page.locator(".qr-code").screenshot())[0].endswith(f"?amount=20200000000&text={tag}")
    shot(page, "wrong", viewport, "1-pending")
    _mark(page)

    page.get_by_role("button", name=re.compile(r"^Pay less")).click()
    expect(_status(page)).to_have_attribute("data-status", "processing")
    mine(_invoice(invoice.pk), 1)  # out of band: only the page's polling can notice

    expect(_status(page)).to_have_attribute("data-status", "wrong")
    expect(page.locator("#pay-announcer")).to_have_text("Payment incomplete")
    expect(page.locator(".summary__missing")).to_have_text(re.compile(r"Missing\s*10\.1 TON"))
    expect(page.locator("#amount")).to_have_text(re.compile(r"^10\.1\s+TON$"))
    _assert_not_reloaded(page)
    shot(page, "wrong", viewport, "2-wrong")
    assert _invoice(invoice.pk).paid_amount == Decimal("10.1")


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_expiry_closes_it_and_the_language_can_be_switched(open_page, live_server, merchant, shot, viewport):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)
    page = open_page(viewport)
    page.goto(f"{live_server.url}/{invoice.pk}")
    _fill_form(page, "usdc")
    filled = _invoice(invoice.pk)
    uri = payment_uri("usdc", address=filled.deposit_address.address, amount=filled.amount_due)
    assert decode_qr(page.locator(".qr-code").screenshot()) == [uri]
    assert "/transfer?address=" in uri and uri.endswith("&uint256=101000000")
    shot(page, "closed", viewport, "1-pending")
    _mark(page)

    page.get_by_role("button", name=re.compile(r"^Expire")).click()

    expect(_status(page)).to_have_attribute("data-status", "closed")
    expect(page.get_by_role("heading", name="This invoice has expired")).to_be_visible()
    expect(page.get_by_role("link", name="Refresh status")).to_have_count(0)
    _assert_not_reloaded(page)
    shot(page, "closed", viewport, "2-closed")

    page.get_by_role("button", name="Русский").click()

    expect(page.get_by_role("heading", name="Срок действия счёта истёк")).to_be_visible()
    assert page.locator("html").get_attribute("lang") == "ru"
    shot(page, "closed", viewport, "3-closed-ru")


def test_the_page_works_without_javascript(open_page, live_server, merchant, shot):
    target = f"{live_server.url}/healthz"
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, redirect_url=target)
    page = open_page("desktop", javascript=False)
    page.goto(f"{live_server.url}/{invoice.pk}")

    _fill_form(page, "eth")

    expect(page.locator(".qr-code")).to_be_visible()
    expect(page.locator(".copy").first).to_be_hidden()  # copying needs the script
    expect(page.get_by_role("link", name="Refresh status")).to_be_visible()
    shot(page, "nojs", "desktop", "1-pending")

    page.get_by_role("button", name=re.compile(r"^Pay exact")).click()
    expect(_status(page)).to_have_attribute("data-status", "processing")
    page.get_by_role("button", name=re.compile(r"^Mine blocks")).click()

    expect(_status(page)).to_have_attribute("data-status", "done")
    shot(page, "nojs", "desktop", "2-done")
    page.wait_for_url(target)  # <noscript> meta refresh
