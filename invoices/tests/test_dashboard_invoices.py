"""Invoice pages: list with filters and search, create form, detail, accept and refund of wrong invoices."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

from decimal import Decimal

import pytest

from invoices.models import Invoice
from payments.models import Company, LedgerEntry
from tests.dashboard import (  # noqa: F401 - fixtures
    company_of,
    dash,
    dashboard_rates,
    older_link,
    text,
)
from tests.factories import InvoiceFactory
from withdrawals.models import Withdrawal

pytestmark = pytest.mark.django_db

NEW = "/dashboard/invoices/new/"
BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
TON_ADDRESS = "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N"
# Paid short of the 100 usd + 1 % due at the test rates (0.00101 btc, 20.2 ton), confirmed: wrong.
WRONG = {"btc": "0.0006", "ton": "10"}


def _detail(invoice: Invoice) -> str:
    return f"/dashboard/invoices/{invoice.pk}/"


def _create(dash, rows, **fields):  # type: ignore[no-untyped-def]
    body = {
        "invoice_currency": "usd",
        "fee_payer": "buyer",
        "payment_currency": "",
        "redirect_url": "",
        "item_name": [name for name, _ in rows],
        "item_price": [price for _, price in rows],
    }
    body.update(fields)
    return dash.post(NEW, body)


# --- list -----------------------------------------------------------------------------------------------


def test_the_list_shows_the_merchants_invoices_newest_first(dash, merchant):
    first = InvoiceFactory(company=merchant.company, total="10")
    second = InvoiceFactory(company=merchant.company, total="20")

    html = text(dash.get("/dashboard/invoices/"))

    assert html.index(str(second.pk)) < html.index(str(first.pk))
    assert "20.00" in html and "10.00" in html


def test_the_list_filters_by_status(dash, merchant):
    created = InvoiceFactory(company=merchant.company)
    pending = InvoiceFactory(company=merchant.company, code="btc")

    html = text(dash.get("/dashboard/invoices/", {"status": "pending"}))

    assert str(pending.pk) in html and str(created.pk) not in html


@pytest.mark.parametrize("query", ["client-7@example.com", "CLIENT-7", "{id}"])
def test_the_list_searches_by_id_or_client_email(dash, merchant, query):
    wanted = InvoiceFactory(company=merchant.company, code="btc", client_email="client-7@example.com")
    other = InvoiceFactory(company=merchant.company, code="btc", client_email="someone@example.com")

    html = text(dash.get("/dashboard/invoices/", {"q": query.format(id=wanted.pk)}))

    assert str(wanted.pk) in html and str(other.pk) not in html


@pytest.mark.parametrize(
    "params",
    [{"status": "bogus"}, {"page": "abc"}, {"page": "999"}, {"q": "x" * 300}, {"status": ["done", "x"]}],
)
def test_bad_list_parameters_never_fail(dash, merchant, params):
    InvoiceFactory(company=merchant.company)

    assert dash.get("/dashboard/invoices/", params).status_code == 200


def test_the_list_is_paginated(dash, merchant):
    invoices = [InvoiceFactory(company=merchant.company, total=n + 1) for n in range(27)]

    first = text(dash.get("/dashboard/invoices/", {"status": ""}))
    link = older_link(first)
    second = text(dash.get("/dashboard/invoices/" + link))

    assert str(invoices[-1].pk) in first and str(invoices[0].pk) not in first
    assert "status=" in link  # the filters are kept
    assert str(invoices[0].pk) in second and str(invoices[1].pk) in second
    assert str(invoices[-1].pk) not in second and 'rel="next"' not in second
    assert 'href="?status=" rel="first"' in second  # back to the newest page, the filters kept
    unfiltered = text(dash.get("/dashboard/invoices/", {"after": link.partition("after=")[2]}))
    assert 'href="/dashboard/invoices/" rel="first"' in unfiltered  # no filters: the list's own address
    # A position edited by hand shows the newest page, not an error.
    assert str(invoices[-1].pk) in text(dash.get("/dashboard/invoices/", {"after": "nonsense"}))


def test_the_list_query_count_does_not_grow_with_invoices(dash, merchant, django_assert_max_num_queries):
    for _ in range(20):
        InvoiceFactory(company=merchant.company, code="btc")

    with django_assert_max_num_queries(12):
        assert dash.get("/dashboard/invoices/").status_code == 200


# --- create ---------------------------------------------------------------------------------------------


def test_an_invoice_is_created_from_the_rows(dash, merchant):
    response = _create(
        dash,
        [("Espresso beans", "60"), ("", ""), ("Discount", "-5.004"), ("Gift wrap", "0")],
        fee_payer="merchant",
        payment_currency="eth",
        redirect_url="https://shop.example/orders/7",
    )

    invoice = Invoice.objects.get(company=merchant.company)
    assert response.status_code == 302 and response["Location"] == _detail(invoice)
    assert [(item.name, item.price) for item in invoice.items.all()] == [
        ("Espresso beans", Decimal("60.00")),
        ("Discount", Decimal("-5.00")),
        ("Gift wrap", Decimal("0.00")),
    ]
    assert invoice.total == Decimal("55.00")
    assert invoice.is_merchant_pays_fee is True
    assert invoice.fixed_payment_code == "eth"
    assert invoice.redirect_url == "https://shop.example/orders/7"
    html = text(dash.get(_detail(invoice)))
    assert "Espresso beans" in html and "55.00 USD" in html
    assert f"http://127.0.0.1:8000/{invoice.pk}" in html or f"/{invoice.pk}" in html


def test_the_form_offers_more_rows_than_the_blank_ones_without_javascript(dash, merchant):
    rows = [(f"Item {n}", "1") for n in range(12)]

    _create(dash, rows)

    assert Invoice.objects.get().items.count() == 12


def test_the_default_fee_payer_comes_from_the_payment_settings(dash, merchant):
    Company.objects.filter(pk=merchant.company.pk).update(default_fee_payer="merchant")

    html = text(dash.get(NEW))

    assert 'value="merchant" required id="id_fee_payer_1" checked' in html or (
        'value="merchant"' in html and "checked" in html.split('value="merchant"')[1][:60]
    )


@pytest.mark.parametrize(
    ("rows", "fields", "message"),
    [
        ([], {}, "Add at least one item with a price."),
        ([("Coffee", "")], {}, "Enter a price."),
        ([("Coffee", "abc")], {}, "price: Must be a plain decimal number in the ASCII digits"),
        ([("Coffee", "NaN")], {}, "price: Must be a plain decimal number in the ASCII digits"),
        ([("Coffee", "1e400")], {}, "price:"),
        ([("Coffee", "10"), ("Refund", "-10")], {}, "the total of the items must be greater than 0"),
        ([("Coffee", "0.004")], {}, "the total of the items must be greater than 0"),
        ([("x" * 501, "1")], {}, "name: Ensure this field has no more than 500 characters."),
        ([("Coffee", "1")], {"invoice_currency": "jpy"}, "Select a valid choice."),
        ([("Coffee", "1")], {"payment_currency": "doge"}, "Select a valid choice."),
        ([("Coffee", "1")], {"redirect_url": "javascript:alert(1)"}, "valid URL"),
        ([("Coffee", "1")], {"fee_payer": "nobody"}, "Select a valid choice."),
    ],
)
def test_bad_invoices_are_refused_with_the_reason_and_nothing_is_created(
    dash, merchant, rows, fields, message
):
    response = _create(dash, rows, **fields)

    assert response.status_code == 200
    assert message in text(response).replace("&#x27;", "'")
    assert not Invoice.objects.exists()


def test_a_payment_currency_the_merchant_does_not_accept_is_not_offered(dash, merchant):
    Company.objects.filter(pk=merchant.company.pk).update(allowed_assets=["btc"])

    response = _create(dash, [("Coffee", "1")], payment_currency="eth")

    assert "Select a valid choice." in text(response)
    assert "eth — Ethereum" not in text(response)
    assert not Invoice.objects.exists()


def test_rows_keep_what_was_typed_when_the_form_comes_back(dash, merchant):
    html = text(_create(dash, [("Espresso beans", "60"), ("Broken", "six")]))

    assert 'value="Espresso beans"' in html and 'value="six"' in html


# --- detail ---------------------------------------------------------------------------------------------


def test_the_detail_shows_payment_transactions_and_the_timeline(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company, code="btc", paid="0.00101")
    assert invoice.status == Invoice.Status.DONE

    html = text(dash.get(_detail(invoice)))

    deposit = invoice.deposit_address.deposits.get()  # type: ignore[union-attr]
    assert f"/sandbox/tx/{deposit.txid}" in html
    assert invoice.deposit_address.address in html  # type: ignore[union-attr]
    for status in ["created", "pending", "processing", "done"]:
        assert f"timeline__item--{status}" in html
    assert html.index("timeline__item--created") < html.index("timeline__item--done")
    assert "0.00101 btc" in html


def test_the_detail_links_the_sandbox_panel_prefilled_with_what_is_missing(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company, code="btc")

    html = text(dash.get(_detail(invoice)))

    address = invoice.deposit_address.address  # type: ignore[union-attr]
    assert f"/dashboard/sandbox/?address={address}&amp;asset=btc&amp;amount=0.00101" in html


def test_an_unknown_invoice_is_404(dash):
    assert dash.get("/dashboard/invoices/00000000-0000-4000-8000-000000000000/").status_code == 404
    assert dash.get("/dashboard/invoices/not-a-uuid/").status_code == 404


# --- accept and refund ----------------------------------------------------------------------------------


def test_accepting_a_wrong_invoice_completes_it(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company, code="btc", paid=WRONG["btc"])

    response = dash.post(f"{_detail(invoice)}accept/", follow=True)

    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    assert "Payment accepted" in text(response)
    assert LedgerEntry.objects.filter(reference=f"invoice:{invoice.pk}").exists()


def test_accepting_an_invoice_that_is_not_wrong_changes_nothing(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company, code="btc")

    response = dash.post(f"{_detail(invoice)}accept/", follow=True)

    assert "Cannot accept an invoice that is pending." in text(response)
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PENDING


def test_the_wrong_invoice_page_offers_both_decisions(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company, code="btc", paid=WRONG["btc"])

    html = text(dash.get(_detail(invoice)))

    assert f'action="{_detail(invoice)}accept/"' in html
    assert f'action="{_detail(invoice)}refund/"' in html


def test_refunding_a_wrong_invoice_sends_the_payment_back(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company, code="btc", paid=WRONG["btc"])

    response = dash.post(f"{_detail(invoice)}refund/", {"address": BTC_ADDRESS, "tag": ""}, follow=True)

    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.REFUNDED
    assert invoice.refund_address == BTC_ADDRESS
    refund = Withdrawal.objects.get(refund_invoice_id=invoice.pk)
    assert refund.to_address == BTC_ADDRESS and refund.amount == Decimal("0.0005")
    assert "Refund sent" in text(response)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"address": "not-an-address"}, "not a valid btc address"),
        ({"address": ""}, "This field is required."),
        ({"address": TON_ADDRESS}, "not a valid btc address"),
        ({"address": BTC_ADDRESS, "tag": "12345"}, "btc addresses take no tag"),
        ({"address": "x" * 129}, "Ensure this value has at most 128 characters"),
    ],
)
def test_a_bad_refund_changes_nothing(dash, merchant, body, message):
    invoice = InvoiceFactory(company=merchant.company, code="btc", paid=WRONG["btc"])

    response = dash.post(f"{_detail(invoice)}refund/", body)

    assert response.status_code == 200
    assert message in text(response)
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.WRONG
    assert not Withdrawal.objects.exists()


def test_a_ton_refund_needs_its_tag(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company, code="ton", paid=WRONG["ton"])

    response = dash.post(f"{_detail(invoice)}refund/", {"address": TON_ADDRESS, "tag": ""})

    assert response.status_code == 200
    assert "ton withdrawals need the receiver&#x27;s tag" in text(response)
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.WRONG
