"""GET /api/transactions/withdrawals and /<uid> (docs/decisions.md)."""

import re

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.chain import fund
from withdrawals.models import Withdrawal
from withdrawals.tests.conftest import ADDRESSES, LIST, client_for, item, run_broadcasts, withdraw

pytestmark = pytest.mark.django_db

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def test_detail_has_the_documented_fields_before_and_after_broadcast(api, funded):
    uid = withdraw(api, item("btc", "0.0015")).json()[0]["uid"]
    before = api.get(f"{LIST}/{uid}").json()
    run_broadcasts()

    after = api.get(f"{LIST}/{uid}").json()

    assert list(before) == [
        *("uid", "status", "asset", "amount", "fee", "to", "tag", "txHash"),
        *("isAutomatic", "waitingReason", "hold", "createdAt", "updatedAt", "sandbox"),
    ]
    assert before["sandbox"] is True  # on the sandbox chain, as its webhooks say
    assert before["uid"] == uid
    assert before["waitingReason"] is None and before["hold"] is None
    assert (before["status"], before["asset"], before["amount"], before["fee"]) == (
        "processing",
        "btc",
        "0.0015",
        "0.0001",
    )
    assert (before["to"], before["tag"], before["txHash"], before["isAutomatic"]) == (
        ADDRESSES["btc"],
        None,
        None,
        False,
    )
    assert TIMESTAMP.fullmatch(before["createdAt"]) and TIMESTAMP.fullmatch(before["updatedAt"])
    txid = Withdrawal.objects.get(uid=uid).txid
    assert after["txHash"] == f"{settings.BASE_URL}/sandbox/tx/{txid}"


def test_list_is_newest_first_and_shows_tags(api, funded):
    first = withdraw(api, item()).json()[0]["uid"]
    second = withdraw(api, item("ton", "1", tag="77")).json()[0]["uid"]

    body = api.get(LIST).json()

    assert body["count"] == 2
    assert [w["uid"] for w in body["results"]] == [second, first]
    assert body["results"][0]["tag"] == "77"


def test_filters_by_status_asset_and_automatic(api, funded):
    btc = withdraw(api, item()).json()[0]["uid"]
    ton = withdraw(api, item("ton", "1", tag="1")).json()[0]["uid"]
    api.post(f"/api/sandbox/withdrawals/{btc}/reject")

    rejected = api.get(LIST, {"status": "rejected"}).json()["results"]
    by_asset = api.get(LIST, {"asset": "TON"}).json()["results"]
    manual = api.get(LIST, {"isAutomatic": "false"}).json()["results"]
    automatic = api.get(LIST, {"isAutomatic": "true"}).json()["results"]

    assert [w["uid"] for w in rejected] == [btc]
    assert [w["uid"] for w in by_asset] == [ton]
    assert {w["uid"] for w in manual} == {btc, ton}
    assert automatic == []


@pytest.mark.parametrize(
    ("params", "field", "code"),
    [
        ({"status": "pending"}, "status", "invalid_choice"),
        ({"asset": "doge"}, "asset", "unsupported_asset"),
        ({"isAutomatic": "yes"}, "isAutomatic", "invalid_choice"),
    ],
)
def test_bad_filters_are_400(api, params, field, code):
    response = api.get(LIST, params)

    assert response.status_code == 400
    assert [(e["field"], e["code"]) for e in response.json()["errors"]] == [(field, code)]


def test_list_is_paginated_with_limit_and_offset(api, funded):
    uids = [entry["uid"] for entry in withdraw(api, *[item()] * 5).json()]

    page = api.get(LIST, {"limit": 2, "offset": 1}).json()

    assert page["count"] == 5
    assert len(page["results"]) == 2
    assert page["next"] and page["previous"]
    assert {w["uid"] for w in page["results"]} <= set(uids)


def test_list_costs_the_same_queries_for_2_or_20_rows(api, funded):
    withdraw(api, *[item()] * 2)
    with CaptureQueriesContext(connection) as few:
        api.get(LIST)
    withdraw(api, *[item()] * 18)

    with CaptureQueriesContext(connection) as many:
        response = api.get(LIST)

    assert len(response.json()["results"]) == 20
    assert len(many.captured_queries) == len(few.captured_queries) <= 3


def test_another_merchants_withdrawals_are_invisible(api, funded, other_merchant):
    fund(other_merchant.company, "btc", "1")
    theirs = client_for(other_merchant)
    foreign = withdraw(theirs, item()).json()[0]["uid"]
    withdraw(api, item())

    listed = api.get(LIST).json()["results"]
    detail = api.get(f"{LIST}/{foreign}")

    assert foreign not in [w["uid"] for w in listed]
    assert detail.status_code == 404
    assert detail.json()["code"] == "not_found"
    assert theirs.get(f"{LIST}/{foreign}").status_code == 200


def test_unknown_uid_is_404_and_lists_need_auth(api, anon):
    assert api.get(f"{LIST}/001-424242").status_code == 404
    assert anon.get(LIST).status_code == 401
    assert anon.get(f"{LIST}/001-1").status_code == 401
