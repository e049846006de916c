"""Another merchant's objects are unreachable from the dashboard: 404 on every detail and action URL,
absent from every list, and no action on them changes anything."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import pytest

from invoices.models import Invoice
from tests.chain import fund
from tests.dashboard import (  # noqa: F401 - fixtures
    dash,
    dashboard_rates,
    text,
)
from tests.factories import InvoiceFactory, StaticDepositAddressFactory, WithdrawalFactory
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


@pytest.fixture
def theirs(other_merchant):  # type: ignore[no-untyped-def]
    """The other merchant's wrong invoice, its webhook events, a static address and a balance."""
    company = other_merchant.company
    invoice = InvoiceFactory(company=company, code="btc", paid="0.0006")  # short of 0.00101: wrong
    assert invoice.status == Invoice.Status.WRONG
    event = WebhookEvent.objects.filter(company=company).first()
    static = StaticDepositAddressFactory(company=company, internal_user_id="their-user")
    fund(company, "eth", "7.123456", reference="their-adjustment")
    withdrawal = WithdrawalFactory(company=company)
    return {"invoice": invoice, "event": event, "static": static, "withdrawal": withdrawal}


def _unchanged(theirs) -> None:  # type: ignore[no-untyped-def]
    invoice = Invoice.objects.get(pk=theirs["invoice"].pk)
    event = WebhookEvent.objects.get(pk=theirs["event"].pk)
    assert invoice.status == Invoice.Status.WRONG
    assert event.status == theirs["event"].status and event.attempt_count == theirs["event"].attempt_count


@pytest.mark.parametrize(
    "path",
    [
        "/dashboard/invoices/{invoice}/",
        "/dashboard/webhooks/{event}/",
        "/dashboard/withdrawals/{withdrawal}/",
    ],
)
def test_their_detail_pages_are_404(dash, theirs, path):
    response = dash.get(
        path.format(
            invoice=theirs["invoice"].pk, event=theirs["event"].pk, withdrawal=theirs["withdrawal"].uid
        )
    )

    assert response.status_code == 404


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/dashboard/invoices/{invoice}/accept/", {}),
        ("/dashboard/invoices/{invoice}/refund/", {"address": BTC_ADDRESS}),
        ("/dashboard/invoices/{invoice}/refund/", {"address": ""}),
        ("/dashboard/webhooks/{event}/redeliver/", {}),
    ],
)
def test_their_action_urls_are_404_and_change_nothing(dash, theirs, path, body):
    response = dash.post(path.format(invoice=theirs["invoice"].pk, event=theirs["event"].pk), body)

    assert response.status_code == 404
    _unchanged(theirs)


def test_lists_show_only_the_merchants_own_objects(dash, merchant, theirs):
    mine = InvoiceFactory(company=merchant.company)
    their_id = str(theirs["invoice"].pk)

    invoices = text(dash.get("/dashboard/invoices/"))
    searched = text(dash.get("/dashboard/invoices/", {"q": their_id}))
    events = text(dash.get("/dashboard/webhooks/"))
    addresses = text(dash.get("/dashboard/addresses/"))
    overview = text(dash.get("/dashboard/"))
    withdrawals = text(dash.get("/dashboard/withdrawals/"))
    export = b"".join(dash.get("/dashboard/withdrawals/export.csv").streaming_content).decode()

    assert str(mine.pk) in invoices and their_id not in invoices
    assert (
        f"/dashboard/invoices/{their_id}/" not in searched and "No invoice matches these filters" in searched
    )
    assert str(theirs["event"].pk) not in events and their_id[:8] not in events
    assert theirs["static"].deposit_address.address not in addresses
    assert their_id[:8] not in overview
    assert theirs["withdrawal"].uid not in withdrawals and theirs["withdrawal"].uid not in export


def test_ledgers_and_balances_are_the_merchants_own(dash, theirs):
    balances = text(dash.get("/dashboard/balances/"))
    ledger = text(dash.get("/dashboard/balances/eth/"))

    assert "7.123456" not in balances
    assert "their-adjustment" not in ledger and "No entries in eth yet." in ledger
