"""Regression tests for hostile input found by the security audit: each is refused with a clear 4xx
problem+json and changes nothing."""

from __future__ import annotations

import bz2
import io
import json
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import path

from invoices.models import Invoice
from payments.models import LedgerEntry, SandboxTransaction
from tests.chain import fund
from withdrawals.models import IdempotencyKey, Withdrawal
from withdrawals.tests.conftest import ADDRESSES

pytestmark = pytest.mark.django_db

ARABIC_TEN = "\u0661\u0660"  # Arabic-Indic "10"
FULLWIDTH_TEN = "\uff11\uff10"  # fullwidth "10"
INVOICES = "/api/invoices/v1/regular"
WITHDRAW = "/api/transactions/withdraw"


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/problem+json")
    body = json.loads(response.content)
    assert body["status"] == status and body["code"]
    return body


def _invoice(api) -> str:
    response = api.post(
        INVOICES, {"invoiceCurrency": "usd", "items": [{"name": "A", "price": "10"}]}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _post_raw(path: str, body: bytes, content_type: str, token: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return Client().generic("POST", path, body, content_type=content_type, **headers)


def test_charset_bz2_is_refused_without_decoding(api, monkeypatch):
    invoice_id = _invoice(api)
    # 242 bytes that bz2 would inflate to 300 MB: the parser must never hand them to the codec.
    bomb = bz2.compress(b"[" * 300_000_000)[:242]
    decoded = []
    monkeypatch.setattr(bz2, "decompress", lambda *args, **kwargs: decoded.append(1))

    response = _post_raw(f"{INVOICES}/{invoice_id}/proceed", bomb, "application/json; charset=bz2")

    body = _problem(response, 415)
    assert body["code"] == "unsupported_media_type"
    assert "UTF-8" in body["detail"]
    assert decoded == []
    assert Invoice.objects.get(pk=invoice_id).status == Invoice.Status.CREATED


@pytest.mark.parametrize("charset", ["rot13", "zlib", "base64", "utf-16", "no-such-codec", "hex"])
def test_charset_other_than_utf8_is_415_not_500(api, charset):
    invoice_id = _invoice(api)

    response = _post_raw(
        f"{INVOICES}/{invoice_id}/proceed",
        b'{"clientEmail": "a@b.c"}',
        f"application/json; charset={charset}",
    )

    _problem(response, 415)
    assert Invoice.objects.get(pk=invoice_id).status == Invoice.Status.CREATED


@pytest.mark.parametrize("charset", ["utf-8", "UTF8", "utf_8"])
def test_every_spelling_of_utf8_is_accepted(api, merchant, charset):
    body = json.dumps({"invoiceCurrency": "usd", "items": [{"name": "Ünïcode", "price": "1"}]}).encode()

    response = _post_raw(INVOICES, body, f"application/json; charset={charset}", merchant.public_token)

    assert response.status_code == 201, response.content


def test_json_nested_1000_deep_is_400(anon, api):
    invoice_id = _invoice(api)
    deep = b"[" * 1000 + b"]" * 1000

    public = _post_raw(f"{INVOICES}/{invoice_id}/proceed", deep, "application/json")
    inner = _post_raw(
        f"{INVOICES}/{invoice_id}/proceed", b'{"clientEmail": ' + deep + b"}", "application/json"
    )

    assert _problem(public, 400)["code"] == "validation_error"
    assert "nested" in _problem(inner, 400)["detail"]


def test_duplicate_json_keys_are_400(merchant):
    body = b'{"invoiceCurrency": "usd", "invoiceCurrency": "eur", "items": [{"name": "A", "price": "1"}]}'

    response = _post_raw(INVOICES, body, "application/json", merchant.public_token)

    assert "twice" in _problem(response, 400)["detail"]
    assert Invoice.objects.count() == 0


@pytest.mark.parametrize("path", [INVOICES, "/api/webhooks/events", "/api/transactions/withdrawals"])
@pytest.mark.parametrize(
    "query", ["limit=1e20", "limit=100000000000000000000", "limit=-1", "limit=0", "limit=%D9%A1", "offset=x"]
)
def test_bad_limit_or_offset_is_400_on_every_list(api, path, query):
    response = api.get(f"{path}?{query}")

    body = _problem(response, 400)
    assert body["errors"][0]["field"] in ("limit", "offset")


@pytest.mark.parametrize("path", [INVOICES, "/api/webhooks/events", "/api/transactions/withdrawals"])
def test_offset_beyond_bigint_is_safe(api, path):
    huge = api.get(f"{path}?offset={10**30}")
    deepest = api.get(f"{path}?offset=1000000000&limit=1000")

    _problem(huge, 400)
    assert deepest.status_code == 200 and deepest.json()["results"] == []


def test_btc_amount_with_12_decimals_beyond_28_digits_is_400(api, merchant):
    fund(merchant.company, "btc", "1")
    amount = "123456789012345678.000000009999"

    withdrawal = api.post(
        WITHDRAW, {"items": [{"asset": "btc", "to": ADDRESSES["btc"], "amount": amount}]}, format="json"
    )
    deposit = api.post(
        "/api/sandbox/deposits",
        {"address": ADDRESSES["btc"], "asset": "btc", "amount": amount},
        format="json",
    )

    assert _problem(withdrawal, 400)["errors"][0]["field"] == "items[0].amount"
    assert _problem(deposit, 400)["errors"][0]["field"] == "amount"
    assert Withdrawal.objects.count() == 0 and SandboxTransaction.objects.count() == 0


@pytest.mark.parametrize(
    "amount",
    [
        ARABIC_TEN,
        FULLWIDTH_TEN,
        "1_000",
        " 10",
        "10 ",
        "\t1",
        "Infinity",
        "NaN",
        "0x10",
        "1e999999999",
        "1,5",
        "\u0661.\u0665",
        "+1",
        "1e-3",
        ".5",
        "5.",
    ],
)
def test_non_ascii_or_decorated_amounts_are_refused(api, merchant, amount):
    fund(merchant.company, "btc", "100000")

    response = api.post(
        WITHDRAW, {"items": [{"asset": "btc", "to": ADDRESSES["btc"], "amount": amount}]}, format="json"
    )

    assert _problem(response, 400)["errors"][0]["field"] == "items[0].amount"
    assert Withdrawal.objects.count() == 0


@pytest.mark.parametrize("price", [ARABIC_TEN, FULLWIDTH_TEN, "1_000", " 10"])
def test_non_ascii_digits_are_refused_in_invoice_prices(api, price):
    response = api.post(
        INVOICES, {"invoiceCurrency": "usd", "items": [{"name": "A", "price": price}]}, format="json"
    )

    assert _problem(response, 400)["errors"][0]["field"] == "items[0].price"


@pytest.mark.parametrize("value", [FULLWIDTH_TEN, "1_0", " 1"])
def test_non_ascii_digits_are_refused_in_underpayment_limits_and_auto_withdrawals(api, value):
    limits = api.patch(
        "/api/company/underpayment-limits",
        {"assets": {"btc": {"static": value, "percentage": 0}}},
        format="json",
    )
    rules = api.patch(
        "/api/company/auto-withdrawals",
        {"assets": {"btc": {"amount": value, "isEnabled": True, "withdrawalAddress": ADDRESSES["btc"]}}},
        format="json",
    )

    assert _problem(limits, 400)["errors"][0]["field"] == "assets.btc.static"
    assert _problem(rules, 400)["errors"][0]["field"] == "assets.btc.amount"


def test_plain_numbers_and_numeric_strings_still_work(api, merchant):
    fund(merchant.company, "btc", "1")

    response = api.post(
        WITHDRAW,
        {
            "items": [
                {"asset": "btc", "to": ADDRESSES["btc"], "amount": "0.001"},
                {"asset": "btc", "to": ADDRESSES["btc"], "amount": Decimal("0.002")},
            ]
        },
        format="json",
    )

    assert response.status_code == 200, response.content
    assert Withdrawal.objects.count() == 2


def test_idempotent_withdraw_with_out_of_range_number_is_400(api, merchant):
    fund(merchant.company, "btc", "1")
    body = (
        b'{"items": [{"asset": "btc", "to": "'
        + ADDRESSES["btc"].encode()
        + b'", "amount": "0.001", "x": 1e101}]}'
    )

    with_key = _post_raw(WITHDRAW, body, "application/json", merchant.public_token)
    client = Client()
    keyed = client.generic(
        "POST",
        WITHDRAW,
        b'{"items": [{"asset": "btc", "to": "x", "amount": 1e101}]}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {merchant.public_token}",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )

    assert with_key.status_code in (200, 400)  # an unknown key is ignored or refused, never a 500
    _problem(keyed, 400)
    assert not IdempotencyKey.objects.filter(key="k-1").exists()


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete", "get"])
@pytest.mark.parametrize(
    "path",
    ["/api/no-such-thing", "/api/transactions/withdraw/", f"{INVOICES}/not-a-uuid", f"{INVOICES}/x/proceed"],
)
def test_post_to_unknown_api_path_is_404_problem_json(merchant, method, path):
    client = Client(enforce_csrf_checks=True)

    response = client.generic(
        method.upper(),
        path,
        b"{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {merchant.public_token}",
    )

    assert _problem(response, 404)["code"] == "not_found"


def test_dashboard_form_refuses_fullwidth_digits(merchant):
    from django.contrib.auth import get_user_model

    fund(merchant.company, "btc", "1")
    client = Client()
    client.force_login(get_user_model().objects.get(email="owner@acme.test"))

    response = client.post(
        "/dashboard/withdrawals/new/",
        {"asset": "btc", "to": ADDRESSES["btc"], "amount": "\uff10.\uff10\uff10\uff11", "tag": ""},
    )

    assert response.status_code in (200, 400)
    assert "ASCII" in response.content.decode()
    assert Withdrawal.objects.count() == 0
    assert LedgerEntry.objects.count() == 1  # the funding only: nothing held


@pytest.mark.parametrize("charset", ["bz2", "zlib", "base64", "hex"])
def test_bytes_codec_charset_with_a_query_string_is_415_through_the_wsgi_application(api, charset):
    """Django decodes the query string with the request's charset while it builds the request, before any
    view: "bz2" raised there and the server sent a bare 500. config/wsgi.py neutralizes the name first."""
    from wsgiref.util import setup_testing_defaults

    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from config.wsgi import application

    invoice_id = _invoice(api)
    body = b'{"clientEmail": "a@b.c"}'
    environ: dict = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": f"{INVOICES}/{invoice_id}/proceed",
        "QUERY_STRING": "a=1",
        "CONTENT_TYPE": f"application/json; charset={charset}",
        "CONTENT_LENGTH": str(len(body)),
    }
    setup_testing_defaults(environ)
    environ["wsgi.input"] = io.BytesIO(body)
    started: list[str] = []
    # As the test client does: the server's end-of-request hook would close the test's database connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        chunks = application(environ, lambda status, headers, *_: started.append(status))
        answer = json.loads(b"".join(chunks))
        chunks.close()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)

    assert started == ["415 Unsupported Media Type"]
    assert answer["code"] == "unsupported_media_type"
    assert Invoice.objects.get(pk=invoice_id).status == Invoice.Status.CREATED


def test_post_to_the_openapi_document_is_405_problem_json(anon):
    response = Client().post("/api/schema/", b"{}", content_type="application/json")

    assert _problem(response, 405)["code"] == "method_not_allowed"


def test_asgi_guard_replaces_a_bytes_codec_charset_and_keeps_utf8():
    import asyncio

    from core.wsgi import REFUSED_CHARSET, asgi_charset_guard

    seen: list[list[tuple[bytes, bytes]]] = []

    async def app(scope, receive, send):
        seen.append(scope["headers"])

    guarded = asgi_charset_guard(app)
    form, json_utf8 = b"application/x-www-form-urlencoded; charset=bz2", b"application/json; charset=utf-8"
    for content_type in (form, json_utf8):
        scope = {"type": "http", "headers": [(b"content-type", content_type), (b"x-other", b"charset=bz2")]}
        asyncio.run(guarded(scope, None, None))

    assert seen[0] == [
        (b"content-type", f"application/x-www-form-urlencoded; charset={REFUSED_CHARSET}".encode()),
        (b"x-other", b"charset=bz2"),
    ]
    assert seen[1][0] == (b"content-type", b"application/json; charset=utf-8")


def _plain_django_view_that_fails(request):
    raise RuntimeError("bug outside DRF")


# Used only by the test below (pytest.mark.urls): a plain Django view under /api/, outside DRF's handler.
urlpatterns = [path("api/plain-boom", _plain_django_view_that_fails)]
handler500 = "config.views.server_error"


@pytest.mark.urls("tests.test_hostile_input")
def test_a_plain_django_500_under_api_is_problem_json():
    client = Client(raise_request_exception=False)

    response = client.get("/api/plain-boom")

    assert _problem(response, 500)["code"] == "internal_error"


@pytest.mark.parametrize("digits", [FULLWIDTH_TEN, ARABIC_TEN, "1_0", " 10"])
@pytest.mark.parametrize(
    "url, body",
    [
        (
            "/dashboard/invoices/new/",
            {"invoice_currency": "usd", "fee_payer": "buyer", "item_name": ["A"], "item_price": ["{}"]},
        ),
        ("/dashboard/settings/payments/underpayment/", {"static_btc": "{}", "percentage_btc": "0"}),
        (
            "/dashboard/withdrawals/rules/",
            {"enabled_btc": "on", "amount_btc": "{}", "address_btc": ADDRESSES["btc"], "tag_btc": ""},
        ),
        (
            "/dashboard/sandbox/deposit/",
            {"address": ADDRESSES["btc"], "asset": "btc", "amount": "{}", "tag": "", "outcome": "confirm"},
        ),
    ],
)
def test_fullwidth_digits_refused_in_dashboard_form(merchant, url, body, digits):
    from invoices.models import UnderpaymentLimit
    from withdrawals.models import AutoWithdrawalRule

    client = Client()
    client.force_login(merchant.company.owner)
    filled = {
        key: [v.replace("{}", digits) for v in value]
        if isinstance(value, list)
        else value.replace("{}", digits)
        for key, value in body.items()
    }

    response = client.post(url, filled)

    assert response.status_code in (200, 400)
    assert "ASCII digits" in response.content.decode()
    assert Invoice.objects.count() == 0 and SandboxTransaction.objects.count() == 0
    assert not UnderpaymentLimit.objects.exists() and not AutoWithdrawalRule.objects.exists()


@pytest.mark.parametrize("debug", [True, False], ids=["development", "production"])
@pytest.mark.parametrize("path", ["/api/foo\n", f"{INVOICES}/\n", "/api/\nx", f"{INVOICES}/x%0A/proceed"])
def test_a_newline_in_an_api_path_is_still_a_problem_json_404(settings, merchant, debug, path):
    """A newline (%0A) escaped the catch-all pattern (`.` does not match it), and under DEBUG Django's own
    HTML 404 page answered."""
    settings.DEBUG = debug

    response = Client().get(path, HTTP_AUTHORIZATION=f"Bearer {merchant.public_token}")

    assert _problem(response, 404)["code"] == "not_found"
