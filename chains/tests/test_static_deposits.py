"""Static deposit addresses and their deposits, through the API alone (docs/decisions.md, docs/api.md)."""

import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from chains.addresses import validate_address
from chains.base import ChainTransfer
from chains.deposits import deposit_ingest
from payments.models import Deposit, LedgerEntry, StaticDepositAddress
from tests.chain import api_mine, api_pay, pay_address
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

STATIC = "/api/addresses/v1/static-deposits"


def _static(api, **overrides):
    body = {"internal_user_id": "user-42", "email": "Buyer@Example.com", "asset": "btc", "network": "btc"}
    body.update(overrides)
    return api.post(STATIC, body, format="json")


def _balance(api, code):
    rows = api.get("/api/company/balances").json()["balances"]
    return next(row for row in rows if row["asset"] == code)


def _deposit_events(company):
    return [
        json.loads(e.body)
        for e in WebhookEvent.objects.filter(company=company, family="deposit").order_by("created_at")
    ]


def test_create_returns_a_valid_address_with_the_documented_fields(api):
    response = _static(api)

    body = response.json()
    assert response.status_code == 201
    assert list(body) == [
        *("id", "internal_user_id", "email", "asset", "network", "address", "createdAt", "sandbox")
    ]
    assert body["sandbox"] is True  # btc runs on the sandbox chain here, as its deposits' webhooks say
    assert body["internal_user_id"] == "user-42"
    assert body["email"] == "buyer@example.com"
    assert (body["asset"], body["network"]) == ("btc", "btc")
    assert validate_address("btc", body["address"]) == body["address"]
    assert body["address"].startswith("bc1q")


def test_same_internal_user_id_returns_the_existing_address(api):
    first = _static(api).json()

    again = _static(api)
    other_user = _static(api, internal_user_id="user-43", email="other@example.com")

    assert again.status_code == 200 and again.json() == first
    assert other_user.status_code == 201 and other_user.json()["address"] != first["address"]
    # Matching by e-mail is off by default: chains/tests/test_static_deposit_matching.py


def test_one_user_gets_one_address_per_network(api):
    btc = _static(api).json()
    usdt = _static(api, asset="USDT", network="TRC20USDT").json()

    assert usdt["network"] == "trc20usdt"
    assert usdt["asset"] == "usdt"
    assert usdt["address"].startswith("T")
    assert usdt["id"] != btc["id"]


def test_ton_address_carries_a_tag_and_others_do_not(api):
    ton = _static(api, asset="ton", network="ton").json()
    second = _static(api, asset="ton", network="ton", internal_user_id="u2", email="").json()

    assert list(ton) == [
        *("id", "internal_user_id", "email", "asset", "network", "address", "tag", "createdAt", "sandbox")
    ]
    assert ton["address"] == second["address"]
    assert ton["tag"] != second["tag"]
    assert second["email"] is None


def test_users_of_different_merchants_never_share_an_address(api, other_merchant):
    from rest_framework.test import APIClient

    theirs = APIClient()
    theirs.credentials(HTTP_AUTHORIZATION=f"Bearer {other_merchant.public_token}")

    mine = _static(api).json()
    other = _static(theirs).json()

    assert mine["address"] != other["address"]
    assert mine["id"] != other["id"]


@pytest.mark.parametrize(
    ("overrides", "field", "code"),
    [
        ({"asset": "eth", "network": "btc"}, "asset", "unsupported_asset"),
        ({"network": "doge"}, "network", "unsupported_asset"),
        ({"internal_user_id": ""}, "internal_user_id", "blank"),
        ({"internal_user_id": 42}, "internal_user_id", "invalid"),
        ({"email": "not-an-email"}, "email", "invalid"),
        ({"internal_user_id": "x" * 129}, "internal_user_id", "max_length"),
    ],
)
def test_bad_input_is_400_and_creates_nothing(api, overrides, field, code):
    response = _static(api, **overrides)

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert response.json()["errors"][0]["code"] == code
    assert StaticDepositAddress.objects.count() == 0


def test_static_addresses_need_auth(anon):
    assert _static(anon).status_code == 401


def test_deposit_is_seen_then_confirmed_then_credited_once_with_processing_and_done(api, merchant):
    address = _static(api).json()

    seen = api_pay(api, address["address"], "0.015", asset="btc")
    one = api_mine(api)
    balance_after_one = _balance(api, "btc")
    two = api_mine(api)
    three = api_mine(api, 5)  # replays: the deposit is final

    assert seen.status_code == 201
    assert seen.json()["status"] == "seen" and seen.json()["confirmations"] == 0
    assert seen.json()["txHash"].endswith("/sandbox/tx/" + seen.json()["txid"])
    assert one.status_code == two.status_code == three.status_code == 200
    assert balance_after_one["available"] == "0"  # btc needs 2 confirmations
    assert _balance(api, "btc") == {"asset": "btc", "currency": "btc", "available": "0.015", "held": "0"}
    events = _deposit_events(merchant.company)
    assert [e["status"] for e in events] == ["processing", "done"]
    assert events[1] == {
        "amount": "0.015",
        "asset": "btc",
        "network": "btc",
        "depositAddress": address["address"],
        "status": "done",
        "id": address["id"],
        "internal_user_id": "user-42",
        "hash": seen.json()["txid"],
        "email": "buyer@example.com",
        "feePayer": "buyer",
        "sandbox": True,  # additive: a payment on the (enabled) sandbox chain
    }
    assert LedgerEntry.objects.filter(kind="deposit_credit").count() == 1


def test_replaying_the_same_transfer_changes_nothing(api, merchant):
    address = _static(api).json()
    txid = api_pay(api, address["address"], "0.015", asset="btc").json()["txid"]
    api_mine(api, 2)
    transfer = ChainTransfer(
        code="btc",
        txid=txid,
        output_index=0,
        address=address["address"],
        tag="",
        amount=Decimal("0.015"),
        confirmations=9,
    )

    deposit_ingest(transfer)
    deposit_ingest(transfer)

    assert Deposit.objects.count() == 1
    assert _balance(api, "btc")["available"] == "0.015"
    assert len(_deposit_events(merchant.company)) == 2


@pytest.mark.parametrize("outcome", ["fail", "freeze"])
def test_failed_and_frozen_deposits_credit_nothing(api, merchant, outcome):
    address = _static(api).json()

    api_pay(api, address["address"], "0.015", asset="btc", outcome=outcome)
    api_mine(api, 3)

    expected = "failed" if outcome == "fail" else "frozen"
    assert [e["status"] for e in _deposit_events(merchant.company)] == ["processing", expected]
    assert _balance(api, "btc")["available"] == "0"
    assert Deposit.objects.get().status == expected


def test_ton_deposit_needs_its_tag_to_reach_the_user(api, merchant):
    ton = _static(api, asset="ton", network="ton").json()

    untagged = api_pay(api, ton["address"], "1.5", asset="ton")
    tagged = api_pay(api, ton["address"], "2", asset="ton", tag=ton["tag"])
    api_mine(api)

    assert untagged.json()["routed"] is False
    assert tagged.json()["routed"] is True
    assert _balance(api, "ton")["available"] == "2"


def test_transfer_to_an_unknown_address_is_recorded_not_dropped(api, merchant):
    unknown = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"

    # The operator's simulator (the API pays only the merchant's own addresses: chains/tests).
    sent = pay_address("btc", unknown, "0.2")
    api_mine(api, 2)

    deposit = Deposit.objects.get(txid=sent.txid)
    assert deposit.company is None and deposit.deposit_address is None
    assert deposit.status == "confirmed"
    assert LedgerEntry.objects.count() == 0


def test_another_merchants_address_is_404(api, other_merchant):
    from rest_framework.test import APIClient

    theirs = APIClient()
    theirs.credentials(HTTP_AUTHORIZATION=f"Bearer {other_merchant.public_token}")
    address = _static(theirs).json()["address"]

    response = api_pay(api, address, "0.015", asset="btc")

    assert response.status_code == 404
    assert Deposit.objects.count() == 0


@pytest.mark.parametrize(
    ("amount", "field"),
    [
        ("0", "amount"),
        ("-1", "amount"),
        ("0.000000001", "amount"),
        ("abc", "amount"),
        (True, "amount"),
        ("NaN", "amount"),
        ("1e400", "amount"),
    ],
)
def test_bad_sandbox_amounts_are_400(api, amount, field):
    address = _static(api).json()["address"]

    response = api_pay(api, address, amount, asset="btc")

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert Deposit.objects.count() == 0


def test_bad_sandbox_address_is_400(api):
    response = api_pay(api, "bc1qnotanaddress", "0.015", asset="btc")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_address"


@pytest.mark.parametrize("count", [0, 101, "many", -1])
def test_bad_block_counts_are_400(api, count):
    assert api_mine(api, count).status_code == 400


def test_codes_on_another_backend_are_refused_by_the_sandbox(api, settings):
    settings.CHAIN_BACKENDS = {"btc": "chains.tests.test_static_deposits.OtherChain"}

    response = api_pay(api, "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "0.015", asset="btc")

    assert response.status_code == 400
    assert response.json()["code"] == "unsupported_asset"


class OtherChain:
    name = "other"


def test_explorer_page_shows_the_transaction(api, client):
    address = _static(api).json()["address"]
    txid = api_pay(api, address, "0.015", asset="btc").json()["txid"]
    api_mine(api)

    page = client.get(f"/sandbox/tx/{txid}")
    missing = client.get("/sandbox/tx/deadbeef")

    html = page.content.decode()
    assert page.status_code == 200
    assert txid in html and address in html and "1 of 2 required" in html
    assert missing.status_code == 404


def test_sandbox_command_deposits_and_mines(api, merchant):
    address = _static(api).json()["address"]
    out = StringIO()

    call_command("sandbox", "deposit", "--address", address, "--asset", "btc", "--amount", "0.5", stdout=out)
    call_command("sandbox", "mine", "--count", "2", stdout=out)

    assert _balance(api, "btc")["available"] == "0.5"
    assert '"txid"' in out.getvalue()


def test_sandbox_command_expires_an_invoice(api, merchant):
    from invoices.models import Invoice

    invoice = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "x", "price": 5}]},
        format="json",
    ).json()
    api.post(
        f"/api/invoices/v1/regular/{invoice['id']}/proceed",
        {"clientEmail": "c@example.com", "paymentCurrency": "btc"},
        format="json",
    )
    out = StringIO()

    call_command("sandbox", "expire", "--invoice", invoice["id"], stdout=out)

    assert json.loads(out.getvalue()) == {"invoiceId": invoice["id"], "status": "closed"}
    assert Invoice.objects.get(pk=invoice["id"]).status == "closed"


def test_sandbox_command_refuses_an_unknown_invoice_clearly():
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="no invoice"):
        call_command("sandbox", "expire", "--invoice", "nope", stdout=StringIO())
