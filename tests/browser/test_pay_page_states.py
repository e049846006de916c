"""Every screen of the pay page in a real browser, at desktop and phone size, saved as screenshots to look at.

Each state is arranged through the services, then rendered with JavaScript on; the page must not scroll
sideways at 390 px, must show the state's headline, and must raise no JavaScript error.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from invoices.models import Invoice
from tests.browser.helpers import ITEMS
from tests.chain import pay
from tests.factories import BTC_ADDRESS, InvoiceFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _no_sideways_scroll(page) -> None:  # type: ignore[no-untyped-def]
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"page is {width}px wide"


def _arrange(company, state: str) -> Invoice:  # type: ignore[no-untyped-def]
    if state == "created":
        return InvoiceFactory(company=company, items=ITEMS)
    if state == "created-fixed":
        return InvoiceFactory(company=company, items=ITEMS, payment_currency="eth")
    code = {"pending-ton": "ton", "pending-usdc": "usdc"}.get(state, "btc")
    # 0.00101 btc is due (100 usd + 1 %): paid in full, over, or short and so wrong.
    paid = {"done": "0.00101", "done-overpaid": "0.002", "wrong": "0.0006", "wrong-late": "0.0006"}.get(state)
    invoice = InvoiceFactory(company=company, items=ITEMS, code=code, paid=paid)
    if state == "processing":
        pay(invoice, "0.00101", blocks=1)  # one of the two confirmations btc needs
    elif state == "wrong-late":
        Invoice.objects.filter(pk=invoice.pk).update(expired_at=timezone.now() - timedelta(minutes=1))
    elif state == "closed":
        from invoices.services import invoice_close

        invoice_close(invoice_id=invoice.pk, now=True)
    elif state == "refunded":
        from invoices.services import invoice_refund

        pay(invoice, "0.0006", blocks=2)
        invoice_refund(company=company, invoice_id=invoice.pk, address=BTC_ADDRESS)
    return invoice


STATES = {
    "created": "How would you like to pay?",
    "created-fixed": "How would you like to pay?",
    "pending": "Awaiting payment",
    "pending-ton": "Awaiting payment",
    "pending-usdc": "Awaiting payment",
    "processing": "Payment seen, waiting for confirmations",
    "done": "Payment complete",
    "done-overpaid": "Payment complete",
    "wrong": "The payment is less than the amount due",
    "wrong-late": "The payment is less than the amount due",
    "closed": "This invoice has expired",
    "refunded": "This payment was refunded",
}


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_every_state_renders_without_errors(open_page, live_server, merchant, shot, viewport):
    page = open_page(viewport)

    for state, headline in STATES.items():
        invoice = _arrange(merchant.company, state)

        page.goto(f"{live_server.url}/{invoice.pk}")

        assert page.locator("#status-title").inner_text() == headline
        _no_sideways_scroll(page)
        shot(page, "state", viewport, state)
        if viewport == "phone":  # the narrowest phones still in use
            page.set_viewport_size({"width": 360, "height": 740})
            _no_sideways_scroll(page)
            page.set_viewport_size({"width": 390, "height": 844})


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_form_error_and_not_found_pages(open_page, live_server, merchant, shot, viewport):
    page = open_page(viewport)
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)
    page.goto(f"{live_server.url}/{invoice.pk}")

    page.locator("#id_email").evaluate("el => el.type = 'text'")  # past the browser's own check
    page.locator("#id_email").fill("not-an-email")
    page.locator("#asset-btc").check()
    page.get_by_role("button", name="Continue to payment").click()

    assert "Enter a valid email address." in page.locator(".form-error").inner_text()
    assert page.locator("#id_email").get_attribute("aria-invalid") == "true"
    shot(page, "state", viewport, "created-error")

    response = page.goto(f"{live_server.url}/00000000-0000-4000-8000-000000000000")

    assert response is not None and response.status == 404
    assert page.get_by_role("heading", name="Page not found").is_visible()
    _no_sideways_scroll(page)
    shot(page, "state", viewport, "not-found")
    open_page.errors.clear()  # the browser logs the 404 of the document itself
