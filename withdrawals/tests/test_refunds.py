"""Declining a wrong invoice sends what arrived, less the network fee, back through a refund withdrawal."""

from decimal import Decimal

import pytest

from invoices.models import Invoice
from payments.ledger import ledger_verify
from tests.chain import api_mine, api_pay
from withdrawals.models import Withdrawal
from withdrawals.tests.conftest import ADDRESSES, LIST, balance, run_broadcasts, withdrawal_events

pytestmark = pytest.mark.django_db

INVOICES = "/api/invoices/v1/regular"


@pytest.fixture(autouse=True)
def round_rates(settings, tmp_path):
    settings.RATES_PROVIDER = "static"
    settings.RATES_STATIC_USD = {**settings.RATES_STATIC_USD, "btc": "100000"}
    settings.RATES_FILE = str(tmp_path / "no-rates.json")
    settings.INVOICE_FEE_PERCENT = "1"


def _wrong_invoice(api, anon, paid="0.0008"):
    created = api.post(
        INVOICES, {"invoiceCurrency": "usd", "items": [{"name": "Lamp", "price": 100}]}, format="json"
    ).json()
    invoice = anon.post(
        f"{INVOICES}/{created['id']}/proceed",
        {"clientEmail": "client@example.com", "paymentCurrency": "btc"},
        format="json",
    ).json()
    api_pay(api, invoice["address"], paid)
    api_mine(api, 2)
    assert Invoice.objects.get(pk=invoice["id"]).status == "wrong"
    return invoice["id"]


def test_refund_of_a_wrong_invoice_withdraws_what_arrived_less_the_fee_to_the_given_address(
    api, anon, merchant
):
    invoice_id = _wrong_invoice(api, anon, paid="0.0008")

    response = api.post(f"{INVOICES}/{invoice_id}/refund", {"address": ADDRESSES["btc"]}, format="json")

    assert response.status_code == 200
    assert response.json()["status"] == "refunded"
    refund = Withdrawal.objects.get()
    assert refund.is_refund and str(refund.refund_invoice_id) == invoice_id
    assert not refund.is_automatic and refund.request_id is None
    assert (refund.amount, refund.fee, refund.to_address) == (
        Decimal("0.0007"),
        Decimal("0.0001"),
        ADDRESSES["btc"],
    )
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal("0.0008"))
    run_broadcasts()
    api_mine(api, 2)
    assert Withdrawal.objects.get().status == "done"
    assert [e["status"] for e in withdrawal_events(refund.uid)] == ["processing", "processing", "done"]
    assert api.get(f"{LIST}/{refund.uid}").json()["amount"] == "0.0007"
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal(0))
    assert ledger_verify() == []


def test_a_refund_too_small_to_send_is_refused_and_the_invoice_stays_wrong(api, anon, merchant):
    invoice_id = _wrong_invoice(api, anon, paid="0.00055")  # 0.00045 after the fee: below the 0.0005 minimum

    response = api.post(f"{INVOICES}/{invoice_id}/refund", {"address": ADDRESSES["btc"]}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "below_minimum"
    assert response.json()["errors"][0]["field"] == "amount"
    assert Invoice.objects.get(pk=invoice_id).status == "wrong"
    assert Withdrawal.objects.count() == 0
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal(0))


def test_a_refund_with_a_tag_on_btc_is_refused(api, anon):
    invoice_id = _wrong_invoice(api, anon)

    response = api.post(
        f"{INVOICES}/{invoice_id}/refund", {"address": ADDRESSES["btc"], "tag": "12"}, format="json"
    )

    assert response.status_code == 400
    assert [(e["field"], e["code"]) for e in response.json()["errors"]] == [("tag", "tag_not_supported")]
    assert Withdrawal.objects.count() == 0
