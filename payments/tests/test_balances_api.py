"""GET /api/company/balances (docs/decisions.md) and the selector behind it."""

from decimal import Decimal

import pytest
import yaml

from core.assets import all_assets
from payments.ledger import ledger_hold
from payments.selectors import balance_list_for_company
from tests.chain import fund

pytestmark = pytest.mark.django_db

URL = "/api/company/balances"


def _zeros():
    return [
        {"asset": asset.code, "currency": asset.base, "available": "0", "held": "0"} for asset in all_assets()
    ]


def _by_code(response):
    return {row["asset"]: row for row in response.json()["balances"]}


def test_without_a_token_is_401(anon):
    response = anon.get(URL)

    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_new_merchant_sees_zero_for_every_code_in_registry_order(api):
    response = api.get(URL)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"balances": _zeros()}
    assert [row["asset"] for row in response.json()["balances"]][:3] == ["btc", "eth", "trc20usdt"]


def test_amounts_after_credits_and_holds_are_plain_strings(api, merchant):
    company = merchant.company
    fund(company, "btc", "0.015")
    fund(company, "trc20usdt", "100")
    fund(company, "eth", "1.5")
    ledger_hold(company_id=company.pk, code="eth", amount=Decimal("0.5"), reference="withdrawal:001-1")
    fund(company, "bnb", "0.000000000000000001")

    rows = _by_code(api.get(URL))

    assert rows["btc"] == {"asset": "btc", "currency": "btc", "available": "0.015", "held": "0"}
    assert rows["trc20usdt"] == {"asset": "trc20usdt", "currency": "usdt", "available": "100", "held": "0"}
    assert rows["eth"] == {"asset": "eth", "currency": "eth", "available": "1", "held": "0.5"}
    assert rows["bnb"]["available"] == "0.000000000000000001"
    assert rows["usdterc20"] == {"asset": "usdterc20", "currency": "usdt", "available": "0", "held": "0"}


def test_another_merchants_balances_never_appear(api, other_merchant):
    fund(other_merchant.company, "btc", "7")
    fund(other_merchant.company, "ton", "3")

    response = api.get(URL)

    assert response.json() == {"balances": _zeros()}


def test_each_merchant_sees_only_their_own_balance(api, merchant, other_merchant):
    fund(merchant.company, "btc", "1")
    fund(other_merchant.company, "btc", "7")

    rows = _by_code(api.get(URL))

    assert rows["btc"]["available"] == "1"


def test_queries_stay_bounded_whatever_the_number_of_accounts(api, merchant, django_assert_max_num_queries):
    for asset in all_assets():
        fund(merchant.company, asset.code, "1")
    api.get(URL)  # the token's "last used" is written on its first call of a minute, not counted here

    with django_assert_max_num_queries(2):  # the token lookup, the accounts
        response = api.get(URL)

    assert response.status_code == 200
    assert {row["available"] for row in response.json()["balances"]} == {"1"}


def test_selector_is_one_query_and_fills_missing_codes_with_zero(merchant, django_assert_num_queries):
    fund(merchant.company, "sol", "2.5")

    with django_assert_num_queries(1):
        rows = balance_list_for_company(company=merchant.company)

    assert [row["code"] for row in rows] == [asset.code for asset in all_assets()]
    sol = next(row for row in rows if row["code"] == "sol")
    assert sol == {"code": "sol", "base": "sol", "available": Decimal("2.5"), "held": Decimal(0)}
    assert sum(row["available"] for row in rows) == Decimal("2.5")


def test_schema_documents_the_endpoint(client):
    response = client.get("/api/schema/")

    schema = yaml.safe_load(response.content)
    operation = schema["paths"]["/api/company/balances"]["get"]
    assert "200" in operation["responses"]
