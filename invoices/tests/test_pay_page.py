"""The hosted pay page at /<invoice_id> through Django's test client: screens per status, the fill
form, the sandbox simulator, languages, 404s and what the page links to."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from html import unescape

import pytest
from django.test import Client
from django.utils import timezone

from chains.sandbox import SandboxBackend
from invoices.models import Invoice
from invoices.payuri import payment_uri
from invoices.services import ItemInput, invoice_close
from payments.models import Deposit
from tests.chain import mine, pay
from tests.factories import InvoiceFactory

pytestmark = pytest.mark.django_db

UNKNOWN = "4b1b0d5c-7a4e-4a8e-9a57-1f0a5f2c9e11"
ITEMS = [ItemInput("Coffee", Decimal(60)), ItemInput("Cake", Decimal(40))]


class OtherChain(SandboxBackend):
    """A backend that is not the sandbox (only its name matters to the page)."""

    name = "other"


def _page(client, invoice, **headers):
    response = client.get(f"/{invoice.pk}", **headers)
    return response, response.content.decode()


def _text(html):
    """The page's visible text, whitespace collapsed: what a person reads."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))


def _csrf(html):
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def _status(invoice):
    return Invoice.objects.values_list("status", flat=True).get(pk=invoice.pk)


# --- created: the fill form ---------------------------------------------------------------------------


def test_created_invoice_shows_company_items_total_and_the_form(client, merchant):
    items = [ItemInput("Coffee", Decimal(60)), ItemInput("Gift wrap", Decimal(0))]
    invoice = InvoiceFactory(company=merchant.company, items=items)

    response, html = _page(client, invoice)

    text = _text(html)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert "no-store" in response["Cache-Control"]
    assert '<html lang="en">' in html
    assert "Acme Shop" in text and "Coffee 60.00 USD" in text and "Gift wrap 0.00 USD" in text
    assert "Total 60.00 USD" in text
    assert "How would you like to pay?" in text
    assert 'type="email" name="email"' in html and '<label for="id_email"' in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_only_the_merchants_allowed_assets_are_offered(client, merchant):
    merchant.company.allowed_assets = ["btc", "usdt"]
    merchant.company.save()
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)

    _, html = _page(client, invoice)

    offered = re.findall(r'name="asset" value="([a-z0-9]+)"', html)
    assert offered == ["btc", "trc20usdt", "usdterc20"]
    assert "Tether USD (TRON, TRC-20)" in html and 'value="eth"' not in html


def test_a_merchant_with_no_allowed_asset_gets_a_clear_message_instead_of_a_form(client, merchant):
    merchant.company.allowed_assets = []
    merchant.company.save()
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)

    _, html = _page(client, invoice)

    assert "does not accept any currency right now" in _text(html)
    assert 'name="email"' not in html


def test_the_form_proceeds_with_csrf_and_redirects_to_the_pending_page(merchant):
    browser = Client(enforce_csrf_checks=True)
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)
    _, html = _page(browser, invoice)

    forged = Client(enforce_csrf_checks=True).post(
        f"/{invoice.pk}", {"email": "client@example.com", "asset": "eth"}
    )
    response = browser.post(
        f"/{invoice.pk}",
        {"csrfmiddlewaretoken": _csrf(html), "email": " Client@Example.com ", "asset": "eth"},
    )

    invoice.refresh_from_db()
    assert forged.status_code == 403
    assert response.status_code == 302 and response["Location"] == f"/{invoice.pk}"
    assert invoice.status == "pending"
    assert invoice.payment_code == "eth" and invoice.client_email == "client@example.com"
    assert "Awaiting payment" in _text(browser.get(response["Location"]).content.decode())


def test_a_bad_email_is_shown_on_the_page_and_changes_nothing(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)

    response = client.post(f"/{invoice.pk}", {"email": "not-an-email", "asset": "btc"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "Enter a valid email address." in _text(html)
    assert 'aria-invalid="true"' in html and 'value="not-an-email"' in html
    assert 'value="btc" id="asset-btc" required checked' in html  # the choice is kept
    assert _status(invoice) == "created"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"email": "a@b.co"}, "Choose the currency you want to pay with."),
        ({"email": "a@b.co", "asset": "doge"}, "Select a valid choice."),
        ({"email": "", "asset": "btc"}, "This field is required."),
    ],
)
def test_a_missing_or_unknown_asset_or_email_is_refused_on_the_page(client, merchant, data, message):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)

    response = client.post(f"/{invoice.pk}", data)

    assert response.status_code == 200
    assert message in _text(response.content.decode())
    assert _status(invoice) == "created"


def test_an_asset_the_merchant_does_not_accept_cannot_be_posted(client, merchant):
    merchant.company.allowed_assets = ["eth"]
    merchant.company.save()
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)

    response = client.post(f"/{invoice.pk}", {"email": "a@b.co", "asset": "btc"})

    assert response.status_code == 200
    assert _status(invoice) == "created"


def test_a_fixed_asset_skips_the_choice(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, payment_currency="eth")

    _, html = _page(client, invoice)
    response = client.post(f"/{invoice.pk}", {"email": "a@b.co", "asset": "btc"})

    invoice.refresh_from_db()
    assert 'name="asset"' not in html
    assert "Ethereum" in _text(html)
    assert response.status_code == 302
    assert invoice.status == "pending" and invoice.payment_code == "eth"


def test_posting_the_form_again_after_fill_just_shows_the_invoice(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")

    response = client.post(f"/{invoice.pk}", {"email": "other@b.co", "asset": "eth"})

    invoice.refresh_from_db()
    assert response.status_code == 302
    assert invoice.payment_code == "btc" and invoice.client_email == "client@example.com"


# --- filled: one screen per status --------------------------------------------------------------------


def test_pending_shows_amount_address_qr_network_and_countdown(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    address = invoice.deposit_address.address

    _, html = _page(client, invoice)

    text = _text(html)
    uri = f"bitcoin:{address}?amount=0.00101"
    assert "Awaiting payment" in text
    assert "Amount to send 0.00101 BTC" in text
    assert 'data-copy="0.00101"' in html and f'data-copy="{address}"' in html
    assert "Network Bitcoin" in text
    assert re.search(r'<svg role="img"[^>]*class="qr-code"><title>QR code for this payment</title>', html)
    assert f'href="{uri}"' in html  # "Open in wallet app"
    seconds = int(re.search(r'data-countdown data-seconds="(\d+)"', html).group(1))
    assert 7190 <= seconds <= 7200  # btc: 120 minutes
    assert re.search(r"Time left: 1:59:\d\d", text)
    assert "Includes a service fee of 0.00001 BTC." in text
    assert "Refresh status" in text and f'href="/{invoice.pk}"' in html


def test_pending_ton_shows_the_required_tag_with_a_warning(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="ton")
    tag = invoice.deposit_address.tag

    _, html = _page(client, invoice)

    text = _text(html)
    assert tag and f'data-copy="{tag}"' in html
    assert f"Comment (memo / tag) {tag}" in text
    assert f"Required: put {tag} in the comment (memo) field of your transfer." in text
    assert "Time left: 29:" in text
    assert "amp;text=" in html  # the QR's ton:// URI, shown in the wallet link
    assert "link-warning" not in html  # a comment can be typed by hand: paying without the QR is fine


def test_pending_tron_says_the_qr_holds_the_address_only(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="trc20usdt")

    _, html = _page(client, invoice)

    text = _text(html)
    assert "The QR code holds the address only: enter the amount yourself." in text
    assert "Open in wallet app" not in text
    assert "Network Tether USD (TRON, TRC-20)" in text


def test_processing_shows_confirmations_seen_of_required(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    pay(invoice, "0.00101")
    before = _text(_page(client, invoice)[1])

    mine(invoice, 1)

    after = _text(_page(client, invoice)[1])
    assert "Payment seen, waiting for confirmations" in before
    assert "Confirmations: 0 of 2" in before
    assert "Confirmations: 1 of 2" in after
    assert "0.00101 BTC Confirming" in after


def test_done_thanks_and_offers_the_redirect_with_a_delay(client, merchant):
    invoice = InvoiceFactory(
        company=merchant.company, items=ITEMS, redirect_url="https://shop.example/order/7", code="btc"
    )
    pay(invoice, "0.00101", blocks=2)

    _, html = _page(client, invoice)

    text = _text(html)
    assert "Payment complete" in text
    assert "Thank you! Acme Shop has received your payment of 0.00101 BTC." in text
    assert 'data-redirect-url="https://shop.example/order/7" data-seconds="5"' in html
    assert 'href="https://shop.example/order/7"' in html and "Return to Acme Shop" in text
    assert (
        '<noscript><meta http-equiv="refresh" content="5;url=https://shop.example/order/7"></noscript>'
        in html
    )
    assert "data-live" not in html  # final: nothing left to poll for


def test_done_falls_back_to_the_company_redirect_then_stays(client, merchant):
    with_default = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    pay(with_default, "0.002", blocks=2)
    merchant.company.redirect_url = "https://shop.example/thanks"
    merchant.company.save()
    default_html = _page(client, with_default)[1]
    merchant.company.redirect_url = ""
    merchant.company.save()

    stay_html = _page(client, with_default)[1]

    assert 'data-redirect-url="https://shop.example/thanks"' in default_html
    assert "data-redirect-url" not in stay_html and "http-equiv" not in stay_html
    assert "You can close this page now." in _text(stay_html)
    assert "You sent more than the 0.00101 BTC due." in _text(stay_html)


def test_wrong_shows_what_was_received_and_what_is_missing(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    pay(invoice, "0.0006", blocks=2)

    _, html = _page(client, invoice)

    text = _text(html)
    address = invoice.deposit_address.address
    assert "The payment is less than the amount due" in text
    assert "Amount due 0.00101 BTC Received 0.0006 BTC Missing 0.00041 BTC" in text
    assert "Send the missing 0.00041 BTC to the same address" in text
    assert f'href="bitcoin:{address}?amount=0.00041"' in html


def test_wrong_after_the_deadline_says_the_merchant_decides(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    pay(invoice, "0.0006", blocks=2)
    Invoice.objects.filter(pk=invoice.pk).update(expired_at=timezone.now() - timedelta(seconds=1))

    _, html = _page(client, invoice)

    text = _text(html)
    assert "Missing 0.00041 BTC" in text
    assert "The time to pay has run out." in text
    assert "qr-code" not in html


def test_closed_and_refunded_are_clear_final_screens(client, merchant):
    closed = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    invoice_close(invoice_id=closed.pk, now=True)
    refunded = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    pay(refunded, "0.0006", blocks=2)
    Invoice.objects.filter(pk=refunded.pk).update(status="refunded")

    closed_text = _text(_page(client, closed)[1])
    refunded_text = _text(_page(client, refunded)[1])

    assert "This invoice has expired" in closed_text
    assert "Do not send anything to this invoice's address any more." in closed_text
    assert closed.deposit_address.address not in closed_text
    assert "This payment was refunded" in refunded_text
    assert "Acme Shop has sent the 0.0006 BTC you paid back" in refunded_text


def test_the_live_section_alone_and_its_fingerprint_match_the_public_json(client, anon, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    pay(invoice, "0.00101", blocks=1)

    partial = client.get(f"/{invoice.pk}?partial=live").content.decode()
    data = anon.get(f"/api/invoices/v1/regular/{invoice.pk}").json()

    expected = "|".join(
        [
            data["status"],
            data["paymentDetails"]["paidAmount"],
            ",".join(f"{t['id']}:{t['status']}:{t['confirmations']}" for t in data["invoiceTransactions"]),
        ]
    )
    assert partial.startswith('<div id="pay-live"') and "<html" not in partial
    assert f'data-fingerprint="{expected}"' in partial
    assert "data-live" in partial


def test_the_created_fingerprint_matches_the_json_too(client, anon, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)

    html = _page(client, invoice)[1]

    assert 'data-fingerprint="created||"' in html
    assert anon.get(f"/api/invoices/v1/regular/{invoice.pk}").json()["status"] == "created"


# --- 404s and routing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [f"/{UNKNOWN}", "/not-an-invoice", f"/{UNKNOWN}/extra", "/12345"])
def test_unknown_invoices_and_paths_get_the_html_404_page(client, path):
    response = client.get(path)

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert "Page not found" in _text(response.content.decode())
    assert "/static/css/pay.css" in response.content.decode()


def test_the_pay_page_shadows_none_of_the_other_routes(client, anon, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)

    api = anon.get(f"/api/invoices/v1/regular/{invoice.pk}")
    api_missing = anon.get(f"/api/invoices/v1/regular/{UNKNOWN}")
    static = client.get("/static/css/pay.css")
    health = client.get("/healthz")
    sandbox_tx = client.get("/sandbox/tx/deadbeef")
    admin = client.get("/admin/")

    assert api.status_code == 200 and api.json()["id"] == str(invoice.pk)
    assert api_missing.status_code == 404 and api_missing["Content-Type"] == "application/problem+json"
    assert static.status_code == 200
    assert health.status_code in (200, 503) and health["Content-Type"] == "application/json"
    assert sandbox_tx.status_code == 404
    assert admin.status_code == 302 and "/admin/login/" in admin["Location"]


# --- languages -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "lang", "phrases"),
    [
        ("es-ES,es;q=0.9", "es", ["¿Cómo quiere pagar?", "Continuar al pago", "Pagar con"]),
        ("ru-RU,ru;q=0.9,en;q=0.5", "ru", ["Как вы хотите оплатить?", "Перейти к оплате", "Способ оплаты"]),
        ("de-DE,de;q=0.9", "en", ["How would you like to pay?", "Continue to payment"]),
    ],
)
def test_the_language_follows_accept_language(client, merchant, accept, lang, phrases):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)

    _, html = _page(client, invoice, HTTP_ACCEPT_LANGUAGE=accept)

    assert f'<html lang="{lang}">' in html
    for phrase in phrases:
        assert phrase in _text(html)


@pytest.mark.parametrize(
    ("lang", "phrases"),
    [
        ("es", ["Esperando el pago", "Importe a enviar", "Tiempo restante", "Red"]),
        ("ru", ["Ожидание оплаты", "Сумма к отправке", "Осталось времени", "Сеть"]),
    ],
)
def test_the_payment_screen_is_translated(client, merchant, lang, phrases):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")

    _, html = _page(client, invoice, HTTP_ACCEPT_LANGUAGE=lang)

    for phrase in phrases:
        assert phrase in _text(html)


def test_the_switcher_sets_the_language_cookie_and_comes_back(merchant):
    browser = Client(enforce_csrf_checks=True)
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS)
    _, html = _page(browser, invoice, HTTP_ACCEPT_LANGUAGE="en")

    response = browser.post(
        "/i18n/setlang/",
        {"csrfmiddlewaretoken": _csrf(html), "language": "ru", "next": f"/{invoice.pk}"},
        HTTP_ACCEPT_LANGUAGE="en",
    )
    again = browser.get(f"/{invoice.pk}", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert 'action="/i18n/setlang/"' in html and 'value="ru" lang="ru"' in html
    assert response.status_code == 302 and response["Location"] == f"/{invoice.pk}"
    assert response.cookies["django_language"].value == "ru"
    assert '<html lang="ru">' in again and "Как вы хотите оплатить?" in _text(again)


def test_the_404_page_is_translated(client):
    response = client.get(f"/{UNKNOWN}", HTTP_ACCEPT_LANGUAGE="es")

    assert "Página no encontrada" in _text(response.content.decode())


# --- sandbox simulator ---------------------------------------------------------------------------------


def _simulate(client, invoice, action, **data):
    return client.post(f"/{invoice.pk}/sandbox/{action}", data)


def test_the_simulator_panel_is_shown_and_labelled_for_sandbox_invoices(client, merchant):
    created = InvoiceFactory(company=merchant.company, items=ITEMS)
    pending = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")

    created_text = _text(_page(client, created)[1])
    pending_html = _page(client, pending)[1]

    assert "Sandbox Payment simulator" in created_text
    assert "the simulator then lets you pay" in created_text
    assert "no real money moves" in _text(pending_html)
    for action in ("pay-exact", "pay-less", "pay-more", "mine", "expire"):
        assert f'action="/{pending.pk}/sandbox/{action}"' in pending_html
    assert "Pay exact 0.00101 BTC" in _text(pending_html)
    assert "Pay less 0.000505 BTC" in _text(pending_html)
    assert "Pay more 0.001212 BTC" in _text(pending_html)
    assert "Mine blocks 2 blocks" in _text(pending_html)


def test_simulating_an_exact_payment_then_blocks_completes_the_invoice(merchant):
    browser = Client(enforce_csrf_checks=True)
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    token = _csrf(_page(browser, invoice)[1])

    forged = Client(enforce_csrf_checks=True).post(f"/{invoice.pk}/sandbox/pay-exact")
    paid = browser.post(f"/{invoice.pk}/sandbox/pay-exact", {"csrfmiddlewaretoken": token})
    processing = _status(invoice)
    mined = browser.post(f"/{invoice.pk}/sandbox/mine", {"csrfmiddlewaretoken": token, "count": "2"})

    assert forged.status_code == 403
    assert paid.status_code == 302 and paid["Location"] == f"/{invoice.pk}"
    assert processing == "processing"
    assert mined.status_code == 302
    assert _status(invoice) == "done"
    deposit = Deposit.objects.get()
    assert deposit.amount == Decimal("0.00101") and deposit.address == invoice.deposit_address.address


def test_while_the_full_amount_confirms_the_simulator_offers_only_blocks(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    _simulate(client, invoice, "pay-exact")

    html = _page(client, invoice)[1]
    again = client.post(f"/{invoice.pk}/sandbox/pay-exact", HTTP_ACCEPT="application/json")

    assert _status(invoice) == "processing"
    for action in ("pay-exact", "pay-less", "pay-more"):
        assert f"/sandbox/{action}" not in html
    assert f'action="/{invoice.pk}/sandbox/mine"' in html
    assert "The full amount has arrived: mine blocks to confirm it." in _text(html)
    assert again.status_code == 409
    assert again.json() == {"ok": False, "error": "The full amount has arrived: mine blocks to confirm it."}
    assert Deposit.objects.count() == 1


def test_after_a_partial_payment_the_simulator_offers_the_rest(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    _simulate(client, invoice, "pay-less")

    text = _text(_page(client, invoice)[1])
    _simulate(client, invoice, "pay-exact")

    assert "Pay exact 0.000505 BTC" in text and "Pay less 0.0002525 BTC" in text
    assert sorted(Deposit.objects.values_list("amount", flat=True)) == [Decimal("0.000505")] * 2


def test_simulating_less_makes_it_wrong_and_exact_then_tops_it_up(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="ton")

    _simulate(client, invoice, "pay-less")
    _simulate(client, invoice, "mine")
    wrong = _status(invoice)
    _simulate(client, invoice, "pay-exact")
    _simulate(client, invoice, "mine")

    assert wrong == "wrong"
    assert _status(invoice) == "done"
    amounts = sorted(Deposit.objects.values_list("amount", flat=True))
    assert amounts == [Decimal("10.1"), Decimal("10.1")]  # half of 20.2 TON, then the rest
    assert set(Deposit.objects.values_list("tag", flat=True)) == {invoice.deposit_address.tag}


def test_simulating_more_is_done_and_overpaid(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")

    _simulate(client, invoice, "pay-more")
    _simulate(client, invoice, "mine", count="5")

    invoice.refresh_from_db()
    assert invoice.status == "done" and invoice.is_overpaid
    assert invoice.paid_amount == Decimal("0.001212")


def test_simulating_expiry_closes_and_answers_json_to_scripts(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")

    response = client.post(f"/{invoice.pk}/sandbox/expire", HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    assert response.json() == {"ok": True, "status": "closed"}


@pytest.mark.parametrize("action", ["pay-exact", "mine", "expire"])
def test_the_simulator_refuses_invoices_without_an_address_or_already_final(client, merchant, action):
    created = InvoiceFactory(company=merchant.company, items=ITEMS)
    closed = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    invoice_close(invoice_id=closed.pk, now=True)

    on_created = _simulate(client, created, action)
    on_closed = client.post(f"/{closed.pk}/sandbox/{action}", HTTP_ACCEPT="application/json")

    assert on_created.status_code == 409
    assert "This simulation does not apply to the invoice now." in _text(on_created.content.decode())
    assert on_closed.status_code == 409 and on_closed.json()["ok"] is False
    assert _status(created) == "created" and _status(closed) == "closed"
    assert Deposit.objects.count() == 0


def test_expiry_is_refused_for_a_wrong_invoice(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    pay(invoice, "0.0006", blocks=2)

    response = _simulate(client, invoice, "expire")

    assert response.status_code == 409
    assert _status(invoice) == "wrong"


def test_the_simulator_does_not_exist_off_the_sandbox_chain(client, merchant, settings):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    settings.CHAIN_BACKENDS = {"btc": "invoices.tests.test_pay_page.OtherChain"}

    responses = [_simulate(client, invoice, action) for action in ("pay-exact", "mine", "expire")]
    _, html = _page(client, invoice)

    assert [r.status_code for r in responses] == [404, 404, 404]
    assert _status(invoice) == "pending" and Deposit.objects.count() == 0
    assert "Payment simulator" not in html and "Sandbox" not in _text(html)


def test_unknown_simulator_actions_and_gets_are_refused(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")

    unknown = _simulate(client, invoice, "pay-twice")
    get = client.get(f"/{invoice.pk}/sandbox/pay-exact")
    missing = client.post(f"/{UNKNOWN}/sandbox/pay-exact")

    assert unknown.status_code == 404 and get.status_code == 405 and missing.status_code == 404


# --- what the page links to ----------------------------------------------------------------------------


def _links(html):
    return re.findall(r'\b(?:src|href|action)="([^"]*)"', html)


def test_no_external_urls_except_the_merchants_own(client, merchant):
    merchant.company.logo_url = "https://shop.example/logo.png"
    merchant.company.save()
    redirect = "https://shop.example/order/7"
    pages = []
    created = InvoiceFactory(company=merchant.company, items=ITEMS, redirect_url=redirect)
    pages.append(_page(client, created)[1])
    for code in ("btc", "eth", "usdc", "ton", "trc20usdt", "sol", "near", "bnb", "bch", "ltc"):
        filled = InvoiceFactory(company=merchant.company, items=ITEMS, redirect_url=redirect, code=code)
        pages.append(_page(client, filled)[1])
    done = InvoiceFactory(company=merchant.company, items=ITEMS, redirect_url=redirect, code="btc")
    pay(done, "0.00101", blocks=1)
    pages.append(_page(client, done)[1])  # processing, with a transaction link
    mine(done, 2)
    pages.append(_page(client, done)[1])
    pages.append(client.get(f"/{UNKNOWN}").content.decode())

    external = {
        link
        for html in pages
        for link in _links(html)
        if re.match(r"(?i)^(https?:)?//", link) and link not in {redirect, "https://shop.example/logo.png"}
    }
    assert external == set()
    assert '<img class="merchant__logo" src="https://shop.example/logo.png"' in pages[0]
    assert any('href="/sandbox/tx/' in html for html in pages)  # the sandbox explorer, same site


def test_payment_links_are_the_wallet_uris(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="eth")

    _, html = _page(client, invoice)

    expected = payment_uri(
        "eth", address=invoice.deposit_address.address, amount=invoice.amount_due, tag=None
    )
    assert expected == f"ethereum:{invoice.deposit_address.address}@1?value=40400000000000000"
    assert f'href="{expected}"' in html


# --- translations ship compiled ------------------------------------------------------------------------


def _po_entries(path):
    """(msgid, msgid_plural, [msgstr...]) of a .po file written without wrapping (makemessages --no-wrap)."""

    def unquote(line):
        return line.split(" ", 1)[1][1:-1].replace('\\"', '"').replace("\\\\", "\\")

    entries, current = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("msgid "):
            current = [unquote(line), None, []]
            entries.append(current)
        elif line.startswith("msgid_plural "):
            current[1] = unquote(line)
        elif line.startswith("msgstr"):
            current[2].append(unquote(line))
    return [entry for entry in entries if entry[0]]  # the header has an empty msgid


@pytest.mark.parametrize("lang", ["es", "ru"])
def test_the_committed_mo_files_match_their_po_files(lang):
    import gettext

    from django.conf import settings

    folder = settings.LOCALE_PATHS[0] / lang / "LC_MESSAGES"
    with (folder / "django.mo").open("rb") as mo:
        catalog = gettext.GNUTranslations(mo)
    entries = _po_entries(folder / "django.po")

    assert "#, fuzzy" not in (folder / "django.po").read_text(encoding="utf-8")
    assert len(entries) > 90
    for msgid, plural, msgstrs in entries:
        assert all(msgstrs), f"untranslated: {msgid}"
        if plural is None:
            assert catalog.gettext(msgid) == msgstrs[0], msgid
        else:
            assert catalog.ngettext(msgid, plural, 1) == msgstrs[0], msgid
            assert catalog.ngettext(msgid, plural, 5) == msgstrs[2 if lang == "ru" else -1], msgid


def test_only_http_links_from_the_merchant_reach_the_page(client, merchant):
    merchant.company.logo_url = "javascript:alert(1)"
    merchant.company.redirect_url = "javascript:alert(2)"
    merchant.company.save()
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    pay(invoice, "0.00101", blocks=2)

    _, html = _page(client, invoice)

    assert "javascript:" not in html
    assert "<img" not in html and "data-redirect-url" not in html


def test_a_pending_invoice_past_its_deadline_warns_before_the_sweep_closes_it(client, merchant):
    invoice = InvoiceFactory(company=merchant.company, items=ITEMS, code="btc")
    Invoice.objects.filter(pk=invoice.pk).update(expired_at=timezone.now() - timedelta(seconds=1))

    _, html = _page(client, invoice)

    assert 'data-seconds="0"' in html
    assert "The time to pay is over: do not send a payment now." in _text(html)
