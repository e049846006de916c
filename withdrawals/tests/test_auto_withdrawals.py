"""GET/PATCH /api/company/auto-withdrawals (docs/api.md) and the sweeps (docs/decisions.md)."""

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from core.assets import all_assets
from payments.ledger import ledger_verify
from tests.chain import api_mine, api_pay, fund
from withdrawals.auto_withdrawals import auto_withdrawal_sweep, auto_withdrawal_sweep_due
from withdrawals.models import AutoWithdrawalRule, Withdrawal
from withdrawals.tests.conftest import ADDRESSES, AUTO, LIST, balance, run_broadcasts, withdrawal_events

pytestmark = pytest.mark.django_db


def _rule(amount="0.01", enabled=True, address=None, tag=None, asset="btc"):
    return {
        "amount": amount,
        "isEnabled": enabled,
        "withdrawalTag": tag,
        "withdrawalAddress": address if address is not None else ADDRESSES[asset],
    }


def _patch(api, assets):
    return api.patch(AUTO, {"assets": assets}, format="json")


def _entry(api, code):
    return next(e for e in api.get(AUTO).json()["autoWithdrawals"] if e["assetId"] == code)


def _errors(response):
    return [(e["field"], e["code"]) for e in response.json()["errors"]]


# --- settings API ------------------------------------------------------------------------------------------


def test_get_lists_every_payment_code_unconfigured(api):
    response = api.get(AUTO)

    entries = response.json()["autoWithdrawals"]
    assert response.status_code == 200
    assert [e["assetId"] for e in entries] == [asset.code for asset in all_assets()]
    assert all(
        e
        == {
            "assetId": e["assetId"],
            "amount": 0,
            "isEnabled": False,
            "withdrawalTag": None,
            "withdrawalAddress": "",
        }
        for e in entries
    )
    assert b'"amount":0,' in response.content  # a JSON number


def test_patch_saves_rules_and_answers_with_the_get_body(api):
    response = _patch(
        api,
        {
            "btc": _rule("0.0125"),
            "TON": _rule("2.5", asset="ton", tag="100200"),
            "eth": _rule("0.01", enabled=False, address=ADDRESSES["eth"].lower()),
        },
    )

    assert response.status_code == 200
    assert response.json() == api.get(AUTO).json()
    assert b'{"assetId":"btc","amount":0.0125,"isEnabled":true,"withdrawalTag":null,' in response.content
    assert _entry(api, "ton") == {
        "assetId": "ton",
        "amount": 2.5,
        "isEnabled": True,
        "withdrawalTag": "100200",
        "withdrawalAddress": ADDRESSES["ton"],
    }
    assert _entry(api, "eth")["isEnabled"] is False
    assert _entry(api, "eth")["withdrawalAddress"] == ADDRESSES["eth"].lower()
    assert AutoWithdrawalRule.objects.count() == 3


def test_patch_changes_an_existing_rule(api):
    _patch(api, {"btc": _rule("0.01")})

    _patch(api, {"btc": _rule("0.02", enabled=False)})

    assert _entry(api, "btc")["amount"] == 0.02
    assert _entry(api, "btc")["isEnabled"] is False
    assert AutoWithdrawalRule.objects.count() == 1


def test_the_unconfigured_values_get_shows_can_be_sent_back(api):
    _patch(api, {"btc": _rule("0.01")})

    response = _patch(
        api, {"btc": {"amount": 0, "isEnabled": False, "withdrawalTag": None, "withdrawalAddress": ""}}
    )

    assert response.status_code == 200
    assert _entry(api, "btc") == {
        "assetId": "btc",
        "amount": 0,
        "isEnabled": False,
        "withdrawalTag": None,
        "withdrawalAddress": "",
    }


@pytest.mark.parametrize(
    ("assets", "field", "code"),
    [
        ({"btc": _rule(address="bc1qnotvalid")}, "assets.btc.withdrawalAddress", "invalid_address"),
        ({"ltc": _rule("0.1", address=ADDRESSES["btc"])}, "assets.ltc.withdrawalAddress", "invalid_address"),
        ({"trx": _rule("20", address=ADDRESSES["eth"])}, "assets.trx.withdrawalAddress", "invalid_address"),
        ({"btc": _rule(address="")}, "assets.btc.withdrawalAddress", "invalid_address"),
        ({"ton": _rule("1", asset="ton")}, "assets.ton.withdrawalTag", "tag_required"),
        ({"ton": _rule("1", asset="ton", tag="")}, "assets.ton.withdrawalTag", "tag_required"),
        ({"btc": _rule(tag="123")}, "assets.btc.withdrawalTag", "tag_not_supported"),
        (
            {"btc": _rule(enabled=False, address="", tag="123")},
            "assets.btc.withdrawalTag",
            "tag_not_supported",
        ),
        ({"btc": _rule("0.0001")}, "assets.btc.amount", "below_minimum"),
        ({"btc": _rule("0")}, "assets.btc.amount", "below_minimum"),
        ({"btc": _rule("0.0001", enabled=False)}, "assets.btc.amount", "below_minimum"),
        ({"btc": _rule("0.123456789")}, "assets.btc.amount", "invalid"),
        ({"btc": _rule("-1")}, "assets.btc.amount", "min_value"),
        ({"btc": _rule("lots")}, "assets.btc.amount", "invalid"),
        ({"btc": _rule(True)}, "assets.btc.amount", "invalid"),
        ({"btc": _rule(enabled="true")}, "assets.btc.isEnabled", "invalid"),
        ({"btc": _rule(enabled=1)}, "assets.btc.isEnabled", "invalid"),
        (
            {"btc": {"isEnabled": True, "withdrawalAddress": ADDRESSES["btc"]}},
            "assets.btc.amount",
            "required",
        ),
        (
            {"btc": {"amount": "0.01", "withdrawalAddress": ADDRESSES["btc"]}},
            "assets.btc.isEnabled",
            "required",
        ),
        ({"btc": {"amount": "0.01", "isEnabled": True}}, "assets.btc.withdrawalAddress", "required"),
        ({"doge": _rule()}, "assets.doge", "unsupported_asset"),
        ({"btc": "on"}, "assets.btc", "invalid"),
    ],
)
def test_an_invalid_rule_is_400_naming_its_field(api, assets, field, code):
    response = _patch(api, assets)

    assert response.status_code == 400
    assert _errors(response) == [(field, code)]
    assert AutoWithdrawalRule.objects.count() == 0


@pytest.mark.parametrize("body", [{}, {"assets": []}, {"assets": {}}, {"assets": None}, ["btc"]])
def test_patch_needs_an_assets_object(api, body):
    response = api.patch(AUTO, body, format="json")

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "assets"


def test_patch_is_all_or_nothing(api):
    response = _patch(
        api,
        {"btc": _rule("0.01"), "ton": _rule("1", asset="ton"), "eth": _rule("0.001", asset="eth")},
    )

    assert response.status_code == 400
    assert sorted(_errors(response)) == [
        ("assets.eth.amount", "below_minimum"),
        ("assets.ton.withdrawalTag", "tag_required"),
    ]
    assert AutoWithdrawalRule.objects.count() == 0


def test_one_code_given_twice_in_two_spellings_is_refused(api):
    response = _patch(api, {"btc": _rule("0.01"), "BTC": _rule("0.02")})

    assert response.status_code == 400
    assert _errors(response) == [("assets.BTC", "duplicate")]
    assert AutoWithdrawalRule.objects.count() == 0


def test_auto_withdrawals_need_auth(anon):
    assert anon.get(AUTO).status_code == 401
    assert anon.patch(AUTO, {"assets": {}}, format="json").status_code == 401


# --- sweeps ---------------------------------------------------------------------------------------------


def test_a_sweep_sends_the_whole_balance_less_the_fee_once_the_threshold_is_reached(api, merchant):
    _patch(api, {"btc": _rule("0.01")})
    fund(merchant.company, "btc", "0.005")
    below = auto_withdrawal_sweep_due()
    fund(merchant.company, "btc", "0.0072")

    swept = auto_withdrawal_sweep_due()

    assert below == []
    assert len(swept) == 1
    withdrawal = Withdrawal.objects.get()
    assert withdrawal.is_automatic and withdrawal.request_id is None
    assert (withdrawal.amount, withdrawal.fee) == (Decimal("0.0121"), Decimal("0.0001"))
    assert withdrawal.to_address == ADDRESSES["btc"]
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal("0.0122"))
    assert [e["status"] for e in withdrawal_events(withdrawal.uid)] == ["processing"]
    listed = api.get(LIST, {"isAutomatic": "true"}).json()["results"]
    assert [w["uid"] for w in listed] == [withdrawal.uid]


def test_a_sweep_in_flight_blocks_the_next_until_it_is_done(api, merchant):
    _patch(api, {"btc": _rule("0.01")})
    fund(merchant.company, "btc", "0.02")
    first = auto_withdrawal_sweep_due()
    fund(merchant.company, "btc", "0.03")

    while_in_flight = auto_withdrawal_sweep_due()
    run_broadcasts()
    api_mine(api, 2)  # the sandbox hook completes the first sweep, then sweeps again

    assert len(first) == 1
    assert while_in_flight == []
    sweeps = list(Withdrawal.objects.order_by("pk"))
    assert [(w.status, w.amount) for w in sweeps] == [
        ("done", Decimal("0.0199")),
        ("processing", Decimal("0.0299")),
    ]
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal("0.03"))
    assert ledger_verify() == []


def test_running_the_sweep_twice_creates_one_withdrawal(api, merchant):
    _patch(api, {"trx": _rule("20", asset="trx")})
    fund(merchant.company, "trx", "50")
    rule = AutoWithdrawalRule.objects.get()

    first = auto_withdrawal_sweep(rule_id=rule.pk)
    second = auto_withdrawal_sweep(rule_id=rule.pk)

    assert first is not None and second is None
    assert Withdrawal.objects.count() == 1


def test_the_database_refuses_a_second_sweep_in_flight(api, merchant):
    _patch(api, {"btc": _rule("0.01")})
    fund(merchant.company, "btc", "0.02")
    existing = auto_withdrawal_sweep_due()[0]

    with pytest.raises(IntegrityError), transaction.atomic():
        Withdrawal.objects.create(
            uid=f"{merchant.company.uid_prefix}-999",
            company=merchant.company,
            code="btc",
            to_address=existing.to_address,
            amount=Decimal("0.001"),
            fee=Decimal("0.0001"),
            is_automatic=True,
        )


@pytest.mark.parametrize(
    ("rule", "funding"),
    [
        (_rule("0.01", enabled=False), "1"),  # disabled
        (_rule("0.0005"), "0.0005"),  # threshold reached, but balance - fee is below the minimum
    ],
)
def test_no_sweep_when_disabled_or_when_it_could_not_send_the_minimum(api, merchant, rule, funding):
    _patch(api, {"btc": rule})
    fund(merchant.company, "btc", funding)

    swept = auto_withdrawal_sweep_due()

    assert swept == []
    assert Withdrawal.objects.count() == 0


def test_a_deposit_mined_on_the_sandbox_triggers_the_sweep(api, merchant):
    _patch(api, {"ton": _rule("1", asset="ton", tag="555")})
    static = api.post(
        "/api/addresses/v1/static-deposits",
        {"internal_user_id": "u1", "asset": "ton", "network": "ton"},
        format="json",
    ).json()
    api_pay(api, static["address"], "3", asset="ton", tag=static["tag"])

    api_mine(api)

    sweep = Withdrawal.objects.get()
    assert sweep.is_automatic
    assert (sweep.amount, sweep.tag, sweep.to_address) == (Decimal("2.95"), "555", ADDRESSES["ton"])
    assert balance(merchant.company, "ton") == (Decimal(0), Decimal(3))
