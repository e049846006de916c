"""The invoice API (docs/api.md) through HTTP only."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from chains.addresses import validate_address
from invoices.models import Invoice
from payments.models import LedgerEntry
from tests.chain import api_mine, api_pay
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

CREATE = "/api/invoices/v1/regular"


def _create(api, **overrides):
    body = {
        "invoiceCurrency": "usd",
        "items": [{"name": "Coffee", "price": 60}, {"name": "Cake", "price": "40"}],
    }
    body.update(overrides)
    return api.post(CREATE, body, format="json")


def _proceed(client, invoice_id, email="client@example.com", currency="btc", **extra):
    body = {"clientEmail": email, "paymentCurrency": currency, **extra}
    return client.post(f"{CREATE}/{invoice_id}/proceed", body, format="json")


def _get(client, invoice_id):
    return client.get(f"{CREATE}/{invoice_id}")


def _statuses(invoice_id):
    events = WebhookEvent.objects.filter(object_id=str(invoice_id), family="invoice").order_by("created_at")
    return [json.loads(e.body)["status"] for e in events]


def _filled(api, anon, **create):
    created = _create(api, **create).json()
    return _proceed(anon, created["id"]).json()


# --- create ---------------------------------------------------------------------------------------------


def test_create_answers_201_with_the_documented_fields_only(api, merchant):
    response = _create(api)

    body = response.json()
    assert response.status_code == 201
    assert list(body) == ["id", "status", "createdAt", "company", "invoiceContent", "sandbox"]
    assert body["status"] == "created"
    assert body["sandbox"] is False  # no payment chosen yet: no simulated money in it
    assert body["createdAt"].endswith("Z") and len(body["createdAt"]) == 24
    assert body["company"]["name"] == "Acme Shop"
    assert body["company"]["logoUrl"] == ""
    assert [a["asset"] for a in body["company"]["assets"]] == [
        "btc",
        "eth",
        "usdt",
        "sol",
        "ton",
        "usdc",
        "bnb",
        "ltc",
        "near",
        "trx",
        "bch",
    ]
    assert all(a["isAllowed"] is True for a in body["company"]["assets"])
    assert body["invoiceContent"] == {
        "invoiceCurrency": "usd",
        "items": [{"name": "Coffee", "price": "60.00"}, {"name": "Cake", "price": "40.00"}],
        "paymentCurrency": None,
        "isMerchantPaysFee": False,
        "redirectURL": None,
    }
    assert _statuses(body["id"]) == ["created"]


@pytest.mark.parametrize(
    ("currency", "price", "expected"),
    [
        ("usd", "1.005", "1.01"),
        ("eur", "2.344", "2.34"),
        ("usdt", 0.125, "0.13"),
        ("usdc", "3", "3.00"),
        ("sol", "0.00005", "0.0001"),
        ("ton", "1.23456", "1.2346"),
        ("btc", "0.0000005", "0.000001"),
        ("eth", "1.1234564", "1.123456"),
        ("bnb", "0.000000015", "0.00000002"),
        ("bch", "1", "1.00000000"),
        ("ltc", "0.123456789", "0.12345679"),
        ("trx", "10.000000004", "10.00000000"),
    ],
)
def test_prices_are_rounded_half_up_to_the_currency_decimals(api, currency, price, expected):
    response = _create(api, invoiceCurrency=currency, items=[{"name": "x", "price": price}])

    assert response.status_code == 201, response.content
    assert response.json()["invoiceContent"]["items"][0]["price"] == expected


def test_zero_and_negative_items_are_kept_when_the_total_is_positive(api):
    items = [
        {"name": "Boots", "price": 100},
        {"name": "Gift wrap", "price": 0},
        {"name": "Discount", "price": -30.5},
    ]

    response = _create(api, items=items)

    assert response.status_code == 201
    assert response.json()["invoiceContent"]["items"] == [
        {"name": "Boots", "price": "100.00"},
        {"name": "Gift wrap", "price": "0.00"},
        {"name": "Discount", "price": "-30.50"},
    ]
    assert Invoice.objects.get().total == 69.5


def test_many_items_and_unicode_names(api):
    items = [{"name": f"Artículo №{i} 🍰", "price": "0.01"} for i in range(300)]

    response = _create(api, items=items)

    assert response.status_code == 201
    assert len(response.json()["invoiceContent"]["items"]) == 300
    assert response.json()["invoiceContent"]["items"][7]["name"] == "Artículo №7 🍰"


@pytest.mark.parametrize(
    ("overrides", "code", "field"),
    [
        ({"items": [{"name": "x", "price": 0}]}, "total_not_positive", "items"),
        ({"items": [{"name": "a", "price": 10}, {"name": "b", "price": -10}]}, "total_not_positive", "items"),
        ({"items": [{"name": "a", "price": -1}]}, "total_not_positive", "items"),
        ({"items": [{"name": "a", "price": "0.004"}]}, "total_not_positive", "items"),  # rounds to 0.00
        # Each price fits the amount columns (18 digits before the point); their sum does not.
        (
            {"items": [{"name": "a", "price": "9" * 18}, {"name": "b", "price": "9" * 18}]},
            "total_too_large",
            "items",
        ),
        ({"items": []}, "validation_error", "items"),
        ({"items": "coffee"}, "validation_error", "items"),
        ({"invoiceCurrency": "rub"}, "unsupported_currency", "invoiceCurrency"),
        ({"invoiceCurrency": "near"}, "unsupported_currency", "invoiceCurrency"),
        ({"invoiceCurrency": 840}, "validation_error", "invoiceCurrency"),
        ({"items": [{"name": "a", "price": "ten"}]}, "validation_error", "items[0].price"),
        ({"items": [{"name": "a", "price": "NaN"}]}, "validation_error", "items[0].price"),
        ({"items": [{"name": "a", "price": True}]}, "validation_error", "items[0].price"),
        ({"items": [{"name": "a", "price": "1e30"}]}, "validation_error", "items[0].price"),
        ({"items": [{"name": 5, "price": 1}]}, "validation_error", "items[0].name"),
        ({"items": [{"price": 1}]}, "validation_error", "items[0].name"),
        ({"items": [{"name": "x" * 501, "price": 1}]}, "validation_error", "items[0].name"),
        ({"paymentCurrency": "doge"}, "unsupported_asset", "paymentCurrency"),
        ({"isMerchantPaysFee": "yes"}, "validation_error", "isMerchantPaysFee"),
        ({"redirectURL": "javascript:alert(1)"}, "validation_error", "redirectURL"),
    ],
)
def test_bad_input_is_400_and_creates_nothing(api, overrides, code, field):
    response = _create(api, **overrides)

    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == code
    assert response.json()["errors"][0]["field"] == field
    assert Invoice.objects.count() == 0
    assert WebhookEvent.objects.count() == 0


def test_missing_invoice_currency_is_400(api):
    response = api.post(CREATE, {"items": [{"name": "x", "price": 1}]}, format="json")

    assert response.status_code == 400
    assert response.json()["errors"][0] == {
        "field": "invoiceCurrency",
        "code": "required",
        "message": "This field is required.",
    }


def test_payment_currency_must_be_allowed_by_the_merchant(api, merchant):
    merchant.company.allowed_assets = ["btc", "eth"]
    merchant.company.save()

    refused = _create(api, paymentCurrency="trc20usdt")
    accepted = _create(api, paymentCurrency="ETH")

    assert refused.status_code == 400 and refused.json()["code"] == "unsupported_asset"
    assert accepted.status_code == 201
    assert accepted.json()["invoiceContent"]["paymentCurrency"] == "eth"
    assert [a["isAllowed"] for a in accepted.json()["company"]["assets"]][:3] == [True, True, False]


def test_create_needs_auth(anon):
    assert _create(anon).status_code == 401


def test_redirect_url_falls_back_to_the_company_default(api):
    api.put(
        "/api/company/settings/redirect-url", {"redirectURL": "https://shop.example/thanks"}, format="json"
    )

    default = _create(api).json()
    own = _create(api, redirectURL="https://shop.example/order/7").json()

    assert default["invoiceContent"]["redirectURL"] == "https://shop.example/thanks"
    assert own["invoiceContent"]["redirectURL"] == "https://shop.example/order/7"


# --- proceed and read -----------------------------------------------------------------------------------


def test_get_of_a_created_invoice_is_public_and_has_no_filled_fields(api, anon):
    created = _create(api).json()

    response = _get(anon, created["id"])

    body = response.json()
    assert response.status_code == 200
    assert list(body) == ["id", "status", "createdAt", "company", "invoiceContent", "redirectURL", "sandbox"]
    assert "redirectURL" not in body["invoiceContent"]


def test_proceed_fills_the_invoice_with_address_rate_fee_and_expiry(api, anon):
    created = _create(api).json()

    before = timezone.now()
    response = _proceed(anon, created["id"])

    body = response.json()
    assert response.status_code == 200, response.content
    assert list(body) == [
        "id",
        "status",
        "createdAt",
        "company",
        "invoiceContent",
        "redirectURL",
        "clientEmail",
        "address",
        "paymentDetails",
        "expiredAt",
        "sandbox",
    ]
    assert body["status"] == "pending"
    assert body["sandbox"] is True  # btc runs on the sandbox chain here, as its webhooks say
    assert body["clientEmail"] == "client@example.com"
    assert body["invoiceContent"]["paymentCurrency"] == "btc"
    assert list(body["address"]) == ["id", "address", "tag", "asset"]
    assert body["address"]["tag"] is None and body["address"]["asset"] == "btc"
    assert validate_address("btc", body["address"]["address"])
    # 100 USD at 100000 USD/BTC = 0.001 BTC; fee 1 % = 0.00001, paid by the client on top.
    assert body["paymentDetails"] == {
        "rate": "0.00001",
        "invoiceFee": "0.00001000",
        "amount": "0.00101000",
        "paidAmount": "0",
        "isOverpaid": False,
    }
    expires = Invoice.objects.get().expired_at
    assert timedelta(minutes=119) < expires - before <= timedelta(minutes=120, seconds=5)
    assert _statuses(created["id"]) == ["created", "pending"]


def test_merchant_paying_the_fee_means_the_client_sends_the_total(api, anon):
    body = _filled(api, anon, isMerchantPaysFee=True)

    assert body["paymentDetails"]["amount"] == "0.00100000"
    assert body["paymentDetails"]["invoiceFee"] == "0.00001000"


def test_other_assets_expire_after_30_minutes_and_ton_gets_a_tag(api, anon):
    created = _create(api).json()

    body = _proceed(anon, created["id"], currency="TON").json()

    expires = Invoice.objects.get().expired_at - Invoice.objects.get().filled_at
    assert expires == timedelta(minutes=30)
    assert body["address"]["tag"]
    assert body["paymentDetails"]["amount"] == "20.200000"  # 100 USD / 5 + 1 %


def test_fixed_payment_currency_wins_over_the_clients(api, anon):
    created = _create(api, paymentCurrency="eth").json()

    body = _proceed(anon, created["id"], currency="btc").json()
    without = _proceed(anon, _create(api, paymentCurrency="eth").json()["id"], currency=None)

    assert body["address"]["asset"] == "eth"
    assert without.status_code == 200


def test_proceed_twice_with_the_same_data_returns_the_same_invoice(api, anon):
    created = _create(api).json()

    first = _proceed(anon, created["id"]).json()
    second = _proceed(anon, created["id"], email="CLIENT@example.com")

    assert second.status_code == 200
    assert second.json() == first
    assert _statuses(created["id"]) == ["created", "pending"]


def test_proceed_again_with_other_data_is_409(api, anon):
    created = _create(api).json()
    _proceed(anon, created["id"])

    response = _proceed(anon, created["id"], currency="eth")

    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"clientEmail": "not-an-email", "paymentCurrency": "btc"}, "clientEmail"),
        ({"clientEmail": 7, "paymentCurrency": "btc"}, "clientEmail"),
        ({"paymentCurrency": "btc"}, "clientEmail"),
        ({"clientEmail": "a@b.co"}, "paymentCurrency"),
        ({"clientEmail": "a@b.co", "paymentCurrency": "doge"}, "paymentCurrency"),
    ],
)
def test_bad_proceed_input_is_400_and_leaves_the_invoice_created(api, anon, body, field):
    created = _create(api).json()

    response = anon.post(f"{CREATE}/{created['id']}/proceed", body, format="json")

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert Invoice.objects.get().status == "created"


def test_proceed_with_an_asset_the_merchant_does_not_accept_is_400(api, anon, merchant):
    merchant.company.allowed_assets = ["eth"]
    merchant.company.save()
    created = _create(api).json()

    response = _proceed(anon, created["id"], currency="btc")

    assert response.status_code == 400
    assert response.json()["code"] == "unsupported_asset"


def test_proceed_on_a_closed_invoice_is_409(api, anon):
    created = _create(api).json()
    _proceed(anon, created["id"])
    api.post(f"/api/sandbox/invoices/{created['id']}/expire")

    response = _proceed(anon, created["id"], currency="eth")

    assert response.status_code == 409


def test_unknown_or_another_merchants_invoice(api, anon, other_merchant):
    from rest_framework.test import APIClient

    theirs = APIClient()
    theirs.credentials(HTTP_AUTHORIZATION=f"Bearer {other_merchant.public_token}")
    created = _create(api).json()

    assert _get(anon, "4b1b0d5c-7a4e-4a8e-9a57-1f0a5f2c9e11").status_code == 404
    assert _get(anon, "not-a-uuid").status_code == 404
    assert _proceed(theirs, created["id"]).status_code == 404
    assert theirs.post(f"{CREATE}/{created['id']}/accept").status_code == 404
    assert theirs.post(f"/api/sandbox/invoices/{created['id']}/expire").status_code == 404
    assert theirs.get(CREATE).json()["count"] == 0


# --- payments -------------------------------------------------------------------------------------------


def test_exact_payment_goes_processing_then_done_and_credits_net_of_fee(api, anon, merchant):
    invoice = _filled(api, anon)

    api_pay(api, invoice["address"], invoice["paymentDetails"]["amount"])
    processing = _get(anon, invoice["id"]).json()
    api_mine(api, 2)
    done = _get(anon, invoice["id"]).json()

    assert processing["status"] == "processing"
    assert processing["invoiceTransactions"][0]["status"] == "seen"
    assert done["status"] == "done"
    assert done["paymentDetails"]["paidAmount"] == "0.00101"
    (tx,) = done["invoiceTransactions"]
    assert list(tx)[:8] == [
        "id",
        "amount",
        "from",
        "txHash",
        "companyId",
        "invoiceId",
        "addressId",
        "createdAt",
    ]
    assert tx["amount"] == "0.00101" and tx["from"] == "btc" and tx["invoiceId"] == invoice["id"]
    assert "/sandbox/tx/" in tx["txHash"]
    assert _statuses(invoice["id"]) == ["created", "pending", "processing", "done"]
    entry = LedgerEntry.objects.get(kind="invoice_credit")
    assert str(entry.available_delta.normalize()) == "0.001"  # 0.00101 received - 0.00001 fee
    assert api.get("/api/company/balances").json()["balances"][0]["available"] == "0.001"


def test_underpayment_makes_the_invoice_wrong_and_a_top_up_in_time_completes_it(api, anon):
    invoice = _filled(api, anon)

    api_pay(api, invoice["address"], "0.0006")
    api_mine(api, 2)
    wrong = _get(anon, invoice["id"]).json()
    api_pay(api, invoice["address"], "0.00041")
    api_mine(api, 2)
    done = _get(anon, invoice["id"]).json()

    assert wrong["status"] == "wrong"
    assert wrong["paymentDetails"]["paidAmount"] == "0.0006"
    assert done["status"] == "done"
    assert _statuses(invoice["id"]) == ["created", "pending", "processing", "wrong", "done"]


def test_overpayment_is_done_and_flagged(api, anon):
    invoice = _filled(api, anon)

    api_pay(api, invoice["address"], "0.002")
    api_mine(api, 2)

    body = _get(anon, invoice["id"]).json()
    assert body["status"] == "done"
    assert body["paymentDetails"]["isOverpaid"] is True


def test_underpayment_limit_lets_a_small_shortfall_complete(api, anon):
    api.patch(
        "/api/company/underpayment-limits",
        {"assets": {"btc": {"static": "0.00002", "percentage": 0}}},
        format="json",
    )
    invoice = _filled(api, anon)

    api_pay(api, invoice["address"], "0.00099")
    api_mine(api, 2)

    assert _get(anon, invoice["id"]).json()["status"] == "done"


def test_merchant_accepts_a_wrong_invoice(api, anon, merchant):
    invoice = _filled(api, anon)
    api_pay(api, invoice["address"], "0.0005")
    api_mine(api, 2)

    response = api.post(f"{CREATE}/{invoice['id']}/accept")

    assert response.status_code == 200
    assert response.json()["status"] == "done"
    assert _statuses(invoice["id"])[-2:] == ["wrong", "done"]
    credit = LedgerEntry.objects.get(kind="invoice_credit")
    assert str(credit.available_delta.normalize()) == "0.00049"  # 0.0005 received - 0.00001 fee


@pytest.mark.parametrize("action", ["accept", "refund"])
def test_accept_or_refund_of_a_non_wrong_invoice_is_409(api, anon, action):
    invoice = _filled(api, anon)

    response = api.post(
        f"{CREATE}/{invoice['id']}/{action}",
        {"address": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"},
        format="json",
    )

    assert response.status_code == 409


def test_pending_invoice_closes_at_expiry_with_its_webhook(api, anon):
    from invoices.services import close_overdue_invoices

    invoice = _filled(api, anon)
    Invoice.objects.filter(pk=invoice["id"]).update(expired_at=timezone.now() - timedelta(seconds=1))

    closed = close_overdue_invoices()

    assert closed == 1
    assert _get(anon, invoice["id"]).json()["status"] == "closed"
    assert _statuses(invoice["id"]) == ["created", "pending", "closed"]
    assert close_overdue_invoices() == 0


def test_processing_invoice_closes_only_after_the_grace_period(api, anon):
    from invoices.services import close_overdue_invoices

    invoice = _filled(api, anon)
    api_pay(api, invoice["address"], invoice["paymentDetails"]["amount"])
    Invoice.objects.filter(pk=invoice["id"]).update(expired_at=timezone.now() - timedelta(minutes=30))
    assert close_overdue_invoices() == 0
    Invoice.objects.filter(pk=invoice["id"]).update(expired_at=timezone.now() - timedelta(minutes=61))

    assert close_overdue_invoices() == 1
    assert _get(anon, invoice["id"]).json()["status"] == "closed"


def test_payment_after_close_is_credited_and_flagged_late_without_changing_status(api, anon):
    invoice = _filled(api, anon)
    api.post(f"/api/sandbox/invoices/{invoice['id']}/expire")

    api_pay(api, invoice["address"], "0.00101")
    api_mine(api, 2)

    body = _get(anon, invoice["id"]).json()
    assert body["status"] == "closed"
    assert body["invoiceTransactions"][0]["isLate"] is True
    assert str(LedgerEntry.objects.get(kind="invoice_credit").available_delta.normalize()) == "0.00101"
    assert _statuses(invoice["id"]) == ["created", "pending", "closed"]


def test_failed_payment_credits_nothing(api, anon):
    invoice = _filled(api, anon)

    api_pay(api, invoice["address"], invoice["paymentDetails"]["amount"], outcome="fail")
    api_mine(api, 2)

    assert _get(anon, invoice["id"]).json()["status"] == "processing"
    assert LedgerEntry.objects.count() == 0


# --- list, settings, limits -----------------------------------------------------------------------------


def test_list_is_the_merchants_paginated_and_filterable(api, anon, django_assert_max_num_queries):
    for _ in range(3):
        _create(api)
    _filled(api, anon)

    with django_assert_max_num_queries(8):
        page = api.get(f"{CREATE}?limit=2").json()
    pending = api.get(f"{CREATE}?status=pending").json()
    bad = api.get(f"{CREATE}?status=paid")

    assert page["count"] == 4 and len(page["results"]) == 2
    assert pending["count"] == 1 and pending["results"][0]["status"] == "pending"
    assert bad.status_code == 400


def test_underpayment_limits_get_and_patch_all_or_nothing(api):
    ok = api.patch(
        "/api/company/underpayment-limits",
        {"assets": {"BTC": {"static": 0.0001, "percentage": "1.5"}}},
        format="json",
    )
    bad = api.patch(
        "/api/company/underpayment-limits",
        {"assets": {"eth": {"static": 1, "percentage": 0}, "btc": {"static": -1, "percentage": 0}}},
        format="json",
    )
    after = api.get("/api/company/underpayment-limits").json()

    assert ok.status_code == 200
    assert after["assets"]["btc"] == {"static": "0.0001", "percentage": 1.5}
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "assets.btc.static"
    assert after["assets"]["eth"] == {"static": "0", "percentage": 0}
    assert list(after["assets"])[:3] == ["btc", "eth", "trc20usdt"]


def test_public_endpoints_are_rate_limited_per_client(api, anon, settings):
    from rest_framework.settings import api_settings

    created = _create(api).json()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"invoice_public": "3/min"},
    }
    api_settings.reload()
    from invoices.api.views import PublicInvoiceThrottle

    PublicInvoiceThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    try:
        codes = [_get(anon, created["id"]).status_code for _ in range(4)]
        limited = _get(anon, created["id"])
        other_client = anon.get(f"{CREATE}/{created['id']}", REMOTE_ADDR="10.9.8.7")
    finally:
        PublicInvoiceThrottle.THROTTLE_RATES = {"invoice_public": "120/min"}

    assert codes == [200, 200, 200, 429]
    assert limited.status_code == 429
    assert limited.json()["code"] == "rate_limited"
    assert int(limited["Retry-After"]) > 0
    assert other_client.status_code == 200


def test_a_fixed_asset_the_merchant_stopped_accepting_is_refused_at_proceed(api, anon, merchant):
    created = _create(api, paymentCurrency="eth").json()
    merchant.company.allowed_assets = ["btc"]
    merchant.company.save()

    response = _proceed(anon, created["id"], currency="btc")

    assert response.status_code == 400
    assert response.json()["code"] == "unsupported_asset"
    assert Invoice.objects.get().status == "created"


def test_the_create_answer_is_what_a_read_then_shows_without_reading_it_back(
    api, anon, django_assert_max_num_queries
):
    # The token, the invoice, its items, its webhook event (5 on PostgreSQL, 6 on SQLite); no re-read.
    api.get("/api/company/balances")  # the token's "last used" is written on its first call of a minute
    with django_assert_max_num_queries(6):
        created = _create(api, items=[{"name": "Tea", "price": "2.125"}, {"name": "Scone", "price": 3}])
    assert created.status_code == 201
    read = _get(anon, created.json()["id"]).json()
    body = created.json()
    assert body["invoiceContent"]["items"] == [
        {"name": "Tea", "price": "2.13"},
        {"name": "Scone", "price": "3.00"},
    ]
    assert body["invoiceContent"].pop("redirectURL") == read["redirectURL"]
    assert {key: body[key] for key in body} == {key: read[key] for key in body}
