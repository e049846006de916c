"""POST /api/transactions/withdraw: rules of docs/api.md and docs/decisions.md, through HTTP."""

import re
from decimal import Decimal

import pytest
from django.test import override_settings

from core.errors import RULE_CODES
from payments.models import LedgerEntry
from tests.chain import fund
from webhooks.models import WebhookEvent
from withdrawals.models import Withdrawal, WithdrawalRequest
from withdrawals.tests.conftest import ADDRESSES, WITHDRAW, balance, item, withdraw, withdrawal_events

pytestmark = pytest.mark.django_db


def _nothing_happened(company, before):
    assert Withdrawal.objects.count() == 0
    assert WithdrawalRequest.objects.count() == 0
    assert not WebhookEvent.objects.filter(family="withdrawal").exists()
    assert not LedgerEntry.objects.filter(kind="withdrawal_hold").exists()
    assert {code: balance(company, code) for code in before} == before


def _errors(response):
    return [(e["field"], e["code"]) for e in response.json()["errors"]]


# --- accepted --------------------------------------------------------------------------------------------


def test_one_item_is_accepted_held_with_its_fee_and_announced(api, funded):
    response = withdraw(api, item("btc", "0.001"))

    body = response.json()
    assert response.status_code == 200
    assert body == [{"message": "Withdrawal accepted", "success": True, "uid": body[0]["uid"]}]
    uid = body[0]["uid"]
    assert re.fullmatch(r"\d{3,}-\d+", uid)
    assert uid.startswith(funded.company.uid_prefix + "-")
    assert balance(funded.company, "btc") == (Decimal("0.9989"), Decimal("0.0011"))
    withdrawal = Withdrawal.objects.get(uid=uid)
    assert (withdrawal.amount, withdrawal.fee, withdrawal.status) == (
        Decimal("0.001"),
        Decimal("0.0001"),
        "processing",
    )
    assert withdrawal.txid == "" and not withdrawal.is_automatic and withdrawal.request_id is None
    assert withdrawal_events(uid) == [
        {
            "type": "withdrawal",
            "status": "processing",
            "asset": "btc",
            "dchain": "btc",
            "amount": Decimal("0.001"),
            "fee": "0.0001",
            "to": ADDRESSES["btc"],
            "txHash": "",
            "uid": uid,
            "sandbox": True,  # additive: a payment on the (enabled) sandbox chain
        }
    ]


def test_bulk_items_get_one_result_each_in_order_and_one_hold_each(api, funded):
    response = withdraw(
        api,
        item("eth", "0.01"),
        item("btc", "0.002"),
        item("trx", "15"),
        item("BTC", "0.0005", tag=""),
    )

    uids = [entry["uid"] for entry in response.json()]
    assert response.status_code == 200
    assert len(set(uids)) == 4
    sequences = [int(uid.split("-")[1]) for uid in uids]
    assert sequences == sorted(sequences) and sequences[-1] - sequences[0] == 3
    codes = [Withdrawal.objects.get(uid=uid).code for uid in uids]
    assert codes == ["eth", "btc", "trx", "btc"]
    assert balance(funded.company, "btc") == (Decimal("0.9973"), Decimal("0.0027"))
    assert balance(funded.company, "eth") == (Decimal("0.9895"), Decimal("0.0105"))
    assert balance(funded.company, "trx") == (Decimal("984"), Decimal("16"))
    holds = LedgerEntry.objects.filter(kind="withdrawal_hold").values_list("reference", flat=True)
    assert sorted(holds) == sorted(f"withdrawal:{uid}" for uid in uids)
    assert WithdrawalRequest.objects.get().item_count == 4


def test_ton_withdrawal_carries_its_tag(api, funded):
    response = withdraw(api, item("ton", "1", tag="987654"))

    withdrawal = Withdrawal.objects.get(uid=response.json()[0]["uid"])
    assert response.status_code == 200
    assert withdrawal.tag == "987654"


def test_uids_are_never_reused_after_a_refused_call(api, funded):
    first = withdraw(api, item()).json()[0]["uid"]
    refused = withdraw(api, item(amount="5"))
    second = withdraw(api, item()).json()[0]["uid"]

    assert refused.status_code == 400
    assert int(second.split("-")[1]) == int(first.split("-")[1]) + 1
    assert Withdrawal.objects.filter(uid__in=[first, second]).count() == 2


def test_each_merchant_has_its_own_uid_prefix(api, other_merchant, funded):
    from withdrawals.tests.conftest import client_for

    fund(other_merchant.company, "btc", "1")

    mine = withdraw(api, item()).json()[0]["uid"]
    theirs = withdraw(client_for(other_merchant), item()).json()[0]["uid"]

    assert mine.split("-")[0] == funded.company.uid_prefix
    assert theirs.split("-")[0] == other_merchant.company.uid_prefix
    assert mine != theirs


# --- refused: one item -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "field", "code"),
    [
        (item("btc", to="bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdX"), "items[0].to", "invalid_address"),
        (item("btc", to=""), "items[0].to", "invalid_address"),
        (item("btc", to=ADDRESSES["eth"]), "items[0].to", "invalid_address"),
        # A Bitcoin address in an ltc withdrawal: bech32 with the wrong prefix, and the P2SH form LTC shares.
        (item("ltc", "0.01", to=ADDRESSES["btc"]), "items[0].to", "invalid_address"),
        (item("ltc", "0.01", to="3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy"), "items[0].to", "invalid_address"),
        (item("trx", "15", to=ADDRESSES["eth"]), "items[0].to", "invalid_address"),
        (item("eth", "0.01", to=ADDRESSES["trx"]), "items[0].to", "invalid_address"),
        # EIP-55: mixed case with a wrong checksum.
        (
            item("eth", "0.01", to="0x52908400098527886E0F7030069857D2E4169Ee7"),
            "items[0].to",
            "invalid_address",
        ),
        (
            item("ton", "1", to="kQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPgpP", tag="1"),
            "items[0].to",
            "invalid_address",
        ),
        (item("btc", "0.0004"), "items[0].amount", "below_minimum"),
        (item("trx", "9.999999"), "items[0].amount", "below_minimum"),
        (item("btc", "0.000500001"), "items[0].amount", "invalid"),  # 9 places, btc has 8
        (item("btc", "0.0010000000000000001"), "items[0].amount", "max_decimal_places"),
        (item("ton", "1"), "items[0].tag", "tag_required"),
        (item("ton", "1", tag=""), "items[0].tag", "tag_required"),
        (item("ton", "1", tag="   "), "items[0].tag", "tag_required"),
        (item("ton", "1", tag=None), "items[0].tag", "tag_required"),
        (item("btc", tag="123"), "items[0].tag", "tag_not_supported"),
        (item("trx", "15", tag="memo"), "items[0].tag", "tag_not_supported"),
        ({"amount": "1", "to": ADDRESSES["btc"], "asset": "doge"}, "items[0].asset", "unsupported_asset"),
        ({"amount": "1", "to": ADDRESSES["btc"], "asset": "usdt"}, "items[0].asset", "unsupported_asset"),
        ({"amount": "1", "to": ADDRESSES["btc"], "asset": 5}, "items[0].asset", "invalid"),
        (item(amount="0"), "items[0].amount", "invalid"),
        (item(amount="-0.001"), "items[0].amount", "invalid"),
        (item(amount="abc"), "items[0].amount", "invalid"),
        (item(amount="NaN"), "items[0].amount", "invalid"),
        (item(amount=True), "items[0].amount", "invalid"),
        ({"to": ADDRESSES["btc"], "asset": "btc"}, "items[0].amount", "required"),
        ({"amount": "1", "asset": "btc"}, "items[0].to", "required"),
        ({"amount": "1", "to": ADDRESSES["btc"]}, "items[0].asset", "required"),
        ("btc", "items[0]", "invalid"),
    ],
)
def test_an_invalid_item_is_400_naming_its_field_and_holds_nothing(api, funded, payload, field, code):
    before = {"btc": balance(funded.company, "btc")}

    response = withdraw(api, payload)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert _errors(response) == [(field, code)]
    assert response.json()["code"] == (code if code in RULE_CODES else "validation_error")
    _nothing_happened(funded.company, before)


def test_several_problems_of_one_item_are_all_listed(api, funded):
    response = withdraw(api, item("ton", "0.1", to="not-an-address"))

    assert response.status_code == 400
    assert sorted(_errors(response)) == [
        ("items[0].amount", "below_minimum"),
        ("items[0].tag", "tag_required"),
        ("items[0].to", "invalid_address"),
    ]
    assert response.json()["code"] == "validation_error"


# --- refused: the call -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"items": []}, "items", "empty"),
        ({"items": {"0": item()}}, "items", "not_a_list"),
        ({"items": "btc"}, "items", "not_a_list"),
        ({"items": None}, "items", "null"),
        ({}, "items", "required"),
        ([item()], "", "invalid"),
    ],
)
def test_a_malformed_call_is_400(api, funded, body, field, code):
    response = api.post(WITHDRAW, body, format="json")

    assert response.status_code == 400
    assert _errors(response) == [(field, code)]
    assert Withdrawal.objects.count() == 0


def test_1001_items_are_too_many_and_1000_are_not(api, funded):
    too_many = withdraw(api, *[item(amount="0.0005")] * 1001)
    enough = withdraw(api, *[item(amount="0.0005")] * 1000)

    assert too_many.status_code == 400
    assert too_many.json()["code"] == "too_many_items"
    assert _errors(too_many) == [("items", "too_many_items")]
    assert enough.status_code == 200
    assert len(enough.json()) == 1000
    assert balance(funded.company, "btc") == (Decimal("0.4"), Decimal("0.6"))


@override_settings(WITHDRAWAL_MAX_ITEMS=3)
def test_the_item_limit_is_a_setting(api, funded):
    response = withdraw(api, *[item()] * 4)

    assert response.status_code == 400
    assert response.json()["code"] == "too_many_items"


def test_one_bad_item_among_good_ones_refuses_the_whole_call_listing_every_bad_item(api, funded):
    before = {code: balance(funded.company, code) for code in ("btc", "eth", "ton")}

    response = withdraw(
        api,
        item("btc", "0.001"),
        item("eth", "0.01", to=ADDRESSES["btc"]),
        item("ton", "1", tag="42"),
        item("btc", "0.0001"),
        item("doge", "1", to="x"),
        item("eth", "0.02"),
    )

    assert response.status_code == 400
    assert _errors(response) == [
        ("items[1].to", "invalid_address"),
        ("items[3].amount", "below_minimum"),
        ("items[4].asset", "unsupported_asset"),
    ]
    assert response.json()["code"] == "validation_error"
    _nothing_happened(funded.company, before)


# --- balance ---------------------------------------------------------------------------------------------


def test_the_network_fee_can_make_the_balance_insufficient(api, merchant):
    fund(merchant.company, "btc", "0.0015")

    refused = withdraw(api, item("btc", "0.0015"))
    exact = withdraw(api, item("btc", "0.0014"))

    assert refused.status_code == 400
    assert refused.json()["code"] == "insufficient_balance"
    assert _errors(refused) == [("items[0].amount", "insufficient_balance")]
    assert "available 0.0015, requested 0.0016" in refused.json()["errors"][0]["message"]
    assert exact.status_code == 200
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal("0.0015"))


def test_the_sum_per_code_is_checked_and_every_item_of_a_short_code_is_named(api, merchant):
    fund(merchant.company, "btc", "0.0021")
    fund(merchant.company, "eth", "1")

    response = withdraw(api, item("btc", "0.001"), item("eth", "0.01"), item("btc", "0.001"))

    assert response.status_code == 400
    assert response.json()["code"] == "insufficient_balance"
    assert _errors(response) == [
        ("items[0].amount", "insufficient_balance"),
        ("items[2].amount", "insufficient_balance"),
    ]
    assert "btc available 0.0021, requested 0.0022" in response.json()["detail"]
    assert balance(merchant.company, "eth") == (Decimal(1), Decimal(0))
    assert Withdrawal.objects.count() == 0


def test_no_balance_at_all_is_insufficient(api):
    response = withdraw(api, item("sol", "1", to="7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV"))

    assert response.status_code == 400
    assert response.json()["code"] == "insufficient_balance"


def test_withdraw_needs_auth(anon):
    response = withdraw(anon, item())

    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"
