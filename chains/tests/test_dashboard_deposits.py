"""The dashboard pages of chains: static deposit addresses and the sandbox panel."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import pytest

from invoices.models import Invoice
from payments.models import SandboxBlock, SandboxTransaction, StaticDepositAddress
from tests.dashboard import (  # noqa: F401 - fixtures
    dash,
    dashboard_rates,
    older_link,
    text,
)
from tests.factories import InvoiceFactory

pytestmark = pytest.mark.django_db

SANDBOX = "/dashboard/sandbox/"


# --- static addresses -----------------------------------------------------------------------------------


def test_a_static_address_is_created_and_listed(dash, merchant):
    response = dash.post(
        "/dashboard/addresses/",
        {"internal_user_id": "user-42", "email": "U42@Example.com", "network": "trc20usdt"},
    )

    static = StaticDepositAddress.objects.get(company=merchant.company)
    assert response.status_code == 302
    assert (static.code, static.internal_user_id, static.email) == ("trc20usdt", "user-42", "u42@example.com")
    html = text(dash.get("/dashboard/addresses/"))
    assert static.deposit_address.address in html and "user-42" in html


def test_asking_again_for_the_same_user_returns_the_same_address(dash, merchant):
    body = {"internal_user_id": "user-42", "email": "", "network": "ton"}
    dash.post("/dashboard/addresses/", body)

    response = dash.post("/dashboard/addresses/", body, follow=True)

    assert StaticDepositAddress.objects.count() == 1
    assert "already has this address" in text(response)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"internal_user_id": "", "network": "btc"}, "This field is required."),
        ({"internal_user_id": "u", "network": "doge"}, "Select a valid choice."),
        (
            {"internal_user_id": "u", "email": "not-an-email", "network": "btc"},
            "Enter a valid email address.",
        ),
        ({"internal_user_id": "u" * 129, "network": "btc"}, "at most 128 characters"),
    ],
)
def test_bad_static_address_requests_create_nothing(dash, merchant, body, message):
    response = dash.post("/dashboard/addresses/", body)

    assert response.status_code == 200
    assert message in text(response)
    assert not StaticDepositAddress.objects.exists()


# --- sandbox --------------------------------------------------------------------------------------------


def _deposit(dash, invoice: Invoice, value: str, **extra: str):  # type: ignore[no-untyped-def]
    invoice.refresh_from_db()
    body = {
        "address": invoice.deposit_address.address,  # type: ignore[union-attr]
        "asset": invoice.payment_code,
        "amount": value,
        "tag": invoice.deposit_address.tag,  # type: ignore[union-attr]
        "outcome": "confirm",
    }
    body.update(extra)
    return dash.post("/dashboard/sandbox/deposit/", body)


def test_the_sandbox_panel_pays_an_invoice_and_mines_it_done(dash, merchant):
    invoice = InvoiceFactory(company=merchant.company, code="btc")

    deposited = _deposit(dash, invoice, "0.00101")

    assert deposited.status_code == 302 and deposited["Location"] == f"{SANDBOX}?mine=btc"
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PROCESSING
    page = text(dash.get(deposited["Location"]))
    assert "in the mempool" in page and 'value="2"' in page
    mined = dash.post("/dashboard/sandbox/mine/", {"asset": "btc", "count": "2"})
    assert mined.status_code == 302
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE


def test_mining_without_a_chain_mines_every_sandbox_chain(dash, merchant):
    dash.post("/dashboard/sandbox/mine/", {"asset": "", "count": "3"})

    assert SandboxBlock.objects.filter(height=3).count() == 12


def test_the_sandbox_form_is_prefilled_from_the_link(dash, merchant):
    html = text(dash.get(SANDBOX, {"address": "bc1qexample", "asset": "btc", "amount": "0.5", "tag": "7"}))

    assert 'value="bc1qexample"' in html and 'value="0.5"' in html and 'value="7"' in html


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"amount": "0"}, "Must be greater than 0."),
        ({"amount": "-1"}, "Must be greater than 0."),
        ({"amount": "abc"}, "Must be a plain decimal number in the ASCII digits 0-9, e.g. 10.5."),
        ({"amount": "0.000000001"}, "btc amounts have at most 8 decimals"),
        ({"address": "not-an-address"}, "not a valid btc address"),
        ({"asset": "doge"}, "Select a valid choice."),
        ({"outcome": "explode"}, "Select a valid choice."),
        ({"amount": ""}, "This field is required."),
    ],
)
def test_bad_sandbox_deposits_send_nothing(dash, merchant, extra, message):
    invoice = InvoiceFactory(company=merchant.company, code="btc")

    response = _deposit(dash, invoice, "0.001", **extra)

    assert response.status_code == 200
    assert message in text(response)
    assert not SandboxTransaction.objects.exists()


def test_a_deposit_to_another_merchants_address_is_refused(dash, merchant, other_merchant):
    theirs = InvoiceFactory(company=other_merchant.company, code="btc")

    response = _deposit(dash, theirs, "0.001")

    assert response.status_code == 200
    assert "This is not one of your deposit addresses" in text(response)
    assert not SandboxTransaction.objects.exists()


@pytest.mark.parametrize(
    ("count", "message"),
    [
        ("0", "greater than or equal to 1"),
        ("101", "less than or equal to 100"),
        ("x", "Enter a whole number."),
    ],
)
def test_bad_block_counts_mine_nothing(dash, merchant, count, message):
    response = dash.post("/dashboard/sandbox/mine/", {"asset": "btc", "count": count})

    assert response.status_code == 200
    assert message in text(response)
    assert not SandboxBlock.objects.exists()


class RealChain:
    """Stands for a real chain backend: the sandbox panel must disappear when no code is on the sandbox."""

    name = "real"


def test_the_sandbox_is_hidden_when_no_code_runs_on_it(dash, settings):
    from core.assets import all_assets

    settings.CHAIN_BACKENDS = {asset.code: f"{__name__}.RealChain" for asset in all_assets()}

    assert dash.get(SANDBOX).status_code == 404
    assert 'href="/dashboard/sandbox/"' not in text(dash.get("/dashboard/"))
    assert dash.post("/dashboard/sandbox/mine/", {"count": "1"}).status_code == 404
    assert not SandboxBlock.objects.exists()
