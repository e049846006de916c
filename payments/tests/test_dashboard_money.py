"""The balances and ledger pages of the dashboard."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

from decimal import Decimal

import pytest

from payments.ledger import ledger_credit
from payments.models import LedgerEntry
from tests.chain import fund
from tests.dashboard import (  # noqa: F401 - fixtures
    dash,
    dashboard_rates,
    older_link,
    text,
)
from tests.factories import InvoiceFactory

pytestmark = pytest.mark.django_db

# --- balances and ledger --------------------------------------------------------------------------------


def test_balances_list_every_payment_code_with_available_and_held(dash, merchant):
    fund(merchant.company, "eth", "1.25", reference="test:1")

    html = text(dash.get("/dashboard/balances/"))

    for code in ["btc", "eth", "trc20usdt", "usdterc20", "ton", "near"]:
        assert f'href="/dashboard/balances/{code}/"' in html
    assert "1.25" in html


def test_the_overview_shows_funded_balances_and_recent_invoices(dash, merchant):
    fund(merchant.company, "eth", "1.25", reference="test:1")
    invoice = InvoiceFactory(company=merchant.company)

    html = text(dash.get("/dashboard/"))

    assert 'href="/dashboard/balances/eth/"' in html and 'href="/dashboard/balances/btc/"' not in html
    assert str(invoice.pk)[:8] in html
    assert "No webhook URL yet" in html


def test_the_ledger_lists_entries_newest_first_in_pages(dash, merchant):
    for n in range(55):
        fund(merchant.company, "btc", f"0.{n + 1:04d}", reference=f"test:{n}")

    first = text(dash.get("/dashboard/balances/btc/"))
    second = text(dash.get("/dashboard/balances/btc/" + older_link(first)))

    assert first.index("test:54") < first.index("test:53")
    assert "test:4<" not in first and "test:0<" in second


def test_ledger_references_link_to_their_invoice(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company)
    ledger_credit(
        company_id=merchant.company.pk,
        code="btc",
        amount=Decimal("0.001"),
        kind=LedgerEntry.Kind.INVOICE_CREDIT,
        reference=f"invoice:{invoice.pk}",
    )

    html = text(dash.get("/dashboard/balances/btc/"))

    assert f'href="/dashboard/invoices/{invoice.pk}/"' in html
    assert "Invoice payment" in html and "+0.001" in html


@pytest.mark.parametrize("code", ["doge", "BTC", "btc%00", "x" * 50])
def test_an_unknown_or_unnormalized_code_is_404(dash, code):
    assert dash.get(f"/dashboard/balances/{code}/").status_code == 404
