"""Property test of the whole API surface against hostile input.

Every API route (enumerated from the URL configuration, so a new endpoint is fuzzed without editing this
file) gets random methods, JSON bodies (nested, huge or exponent numbers, non-ASCII digits, duplicate keys,
wrong types), content types and charsets, and query strings, with and without credentials, its path
parameters filled with a real object's id or with junk. For every answer: never a 5xx; every error is
application/problem+json with a `code`; and an error changes nothing (row counts and ledger sums are the
same before and after).
"""

from __future__ import annotations

import json
import re
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.money import exact_sum
from core.wsgi import neutralize_charset
from invoices.models import Invoice, UnderpaymentLimit
from payments.models import Account, Company, Deposit, LedgerEntry, QuarantinedTransfer, StaticDepositAddress
from tests.chain import fund
from webhooks.models import WebhookEvent
from withdrawals.models import AutoWithdrawalRule, IdempotencyKey, Withdrawal
from withdrawals.tests.conftest import ADDRESSES

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)

# Pages for people (HTML documentation), and the OpenAPI document (its 405 is covered in test_hostile_input):
# generating it takes a third of a second, which would be most of this file's run time.
NOT_FUZZED = {"api/docs/", "api/redoc/", "api/schema/"}
CATCH_ALL = r"api/^[\s\S]*$"


def _api_routes() -> list[str]:
    """Every route under /api/ as a pattern text, e.g. "api/invoices/v1/regular/<uuid:invoice_id>"."""
    routes: list[str] = []

    def walk(patterns: list[URLPattern | URLResolver], prefix: str) -> None:
        for entry in patterns:
            text = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, text)
            elif text.startswith("api/") and text not in NOT_FUZZED:
                routes.append(text)

    walk(get_resolver().url_patterns, "")
    return routes


ROUTES = _api_routes()
PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def test_the_fuzzed_routes_include_every_api_endpoint():
    # Guards the enumeration itself: an empty or partial list would make the properties below vacuous.
    assert CATCH_ALL in ROUTES
    for route in (
        "api/invoices/v1/regular/<uuid:invoice_id>/proceed",
        "api/transactions/withdraw",
        "api/transactions/withdrawals/<str:uid>",
        "api/webhooks/events/<uuid:event_id>/redeliver",
        "api/company/auto-withdrawals",
        "api/sandbox/deposits",
    ):
        assert route in ROUTES


# --- strategies -------------------------------------------------------------------------------------------

HOSTILE_NUMBER_TEXT = [
    "1e101",
    "-1e101",
    "1E-400",
    "1e999999999",
    "123456789012345678.000000009999",
    "9" * 40,
    "0." + "0" * 30 + "1",
    "1e2",
    "-0",
    "0.00000000000000000001",
]
HOSTILE_STRINGS = [
    "\u0661\u0660",  # Arabic-Indic 10
    "\uff11\uff10",  # fullwidth 10
    "1_000",
    " 10",
    "10 ",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x10",
    "1,5",
    "+1",
    "1e5",
    "",
    "\x00",
    "\ud7ff" * 3,
    "a" * 5000,
    "btc",
    "BTC",
    "usd",
    "ton",
    ADDRESSES["btc"],
    "00000000-0000-0000-0000-000000000000",
    "true",
    "null",
]
KEYS = [
    "amount",
    "asset",
    "to",
    "tag",
    "items",
    "price",
    "name",
    "invoiceCurrency",
    "clientEmail",
    "paymentCurrency",
    "url",
    "count",
    "address",
    "static",
    "percentage",
    "assets",
    "isEnabled",
    "withdrawalAddress",
    "internal_user_id",
    "network",
    "x",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from(HOSTILE_NUMBER_TEXT).map(Decimal),
    st.sampled_from(HOSTILE_STRINGS),
    st.sampled_from(HOSTILE_NUMBER_TEXT),
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), children, max_size=5),
    ),
    max_leaves=15,
)


def _near_valid(asset: str, amount: Any, extra: Any) -> dict[str, Any]:
    """Bodies shaped like real requests of several endpoints at once, with one hostile value inside."""
    return {
        "items": [{"asset": asset, "to": ADDRESSES["btc"], "amount": amount, "name": "A", "price": amount}],
        "invoiceCurrency": "usd",
        "asset": asset,
        "network": asset,
        "internal_user_id": "user-1",
        "address": ADDRESSES["btc"],
        "amount": amount,
        "count": amount,
        "url": extra,
        "assets": {asset: {"static": amount, "percentage": amount}},
        asset: {"amount": amount, "isEnabled": True, "withdrawalAddress": ADDRESSES["btc"]},
        "clientEmail": extra,
    }


def _encode(value: Any) -> bytes:
    return json.dumps(value, default=str, ensure_ascii=False).encode()


def _duplicate_keys(value: Any) -> bytes:
    text = _encode(value)
    return b'{"amount": 1, "amount": ' + text + b"}"


def _deep(depth: int) -> bytes:
    return b'{"items": ' + b"[" * depth + b"]" * depth + b"}"


bodies = st.one_of(
    json_values.map(_encode),
    st.builds(
        _near_valid,
        st.sampled_from(["btc", "BTC", "ton", "usd", "doge", "", 1]),
        scalars,
        scalars,
    ).map(_encode),
    json_values.map(_duplicate_keys),
    st.integers(min_value=60, max_value=5000).map(_deep),
    st.sampled_from([b"", b"{", b"[1,]", b'{"a": NaN}', b'{"a": 1e999999}', b"\xff\xfe{}", b"null"]),
    st.binary(max_size=64),
)
content_types = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "application/json; charset=UTF8",
        "application/json; charset=bz2",
        "application/json; charset=rot13",
        "application/json; charset=utf-16",
        "application/json; charset=no-such-codec",
        "application/json; charset=",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/problem+json",
        "",
    ]
)
query_values = st.one_of(
    st.sampled_from(
        ["1e20", "10" * 20, str(10**30), "-1", "0", "1", "1000", "1001", "\u0661", " 5", "x", ""]
    ),
    st.sampled_from(HOSTILE_STRINGS),
)
queries = st.lists(
    st.tuples(
        st.sampled_from(["limit", "offset", "asset", "status", "isAutomatic", "type", "from", "to", "x"]),
        query_values,
    ),
    max_size=3,
)
methods = st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"])
junk_segments = st.sampled_from(
    ["not-a-uuid", "x" * 300, "%00", "..", str(uuid.UUID(int=0)), "007-1", "\u0661"]
)


# --- world ------------------------------------------------------------------------------------------------


@pytest.fixture
def world(merchant, api):
    """Real objects for the path parameters: an invoice, its webhook event, a withdrawal."""
    fund(merchant.company, "btc", "1")
    invoice = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "A", "price": "10"}]},
        format="json",
    )
    assert invoice.status_code == 201, invoice.content
    withdrawal = api.post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "btc", "to": ADDRESSES["btc"], "amount": "0.001"}]},
        format="json",
    )
    assert withdrawal.status_code == 200, withdrawal.content
    event = WebhookEvent.objects.filter(company=merchant.company).first()
    return {
        "invoice_id": invoice.json()["id"],
        "uid": Withdrawal.objects.get().uid,
        "event_id": str(event.pk) if event else str(uuid.uuid4()),
        "token": merchant.public_token,
    }


def _snapshot() -> dict[str, Any]:
    """What a refused request must leave as it was."""
    models = [
        Company,
        Invoice,
        UnderpaymentLimit,
        Withdrawal,
        AutoWithdrawalRule,
        IdempotencyKey,
        Deposit,
        StaticDepositAddress,
        LedgerEntry,
        WebhookEvent,
        QuarantinedTransfer,
    ]
    state: dict[str, Any] = {model.__name__: model.objects.count() for model in models}
    state["ledger"] = [
        exact_sum(LedgerEntry.objects.values_list(column, flat=True))
        for column in ("available_delta", "held_delta")
    ]
    state["accounts"] = sorted((a.company_id, a.code, a.available, a.held) for a in Account.objects.all())
    state["companies"] = sorted(Company.objects.values_list("pk", "webhook_url", "redirect_url"))
    state["invoices"] = sorted(Invoice.objects.values_list("pk", "status"))
    state["withdrawals"] = sorted(Withdrawal.objects.values_list("pk", "status"))
    return state


def _path(route: str, world: dict[str, Any], junk: str | None, tail: str) -> str:
    if route == CATCH_ALL:
        return "/api/" + tail

    def fill(match: re.Match[str]) -> str:
        if junk is not None:
            return junk
        return str(world[match.group(2)]) if match.group(2) in world else str(uuid.uuid4())

    return "/" + PARAM.sub(fill, route)


class ServerClient(Client):
    """The test client, with the environ guard that config/wsgi.py puts in front of Django."""

    def _base_environ(self, **request: Any) -> dict[str, Any]:
        environ: dict[str, Any] = super()._base_environ(**request)
        neutralize_charset(environ)
        return environ


def _check(response: Any, before: dict[str, Any], request: str) -> None:
    assert response.status_code < 500, f"{request} -> {response.status_code}: {response.content[:300]!r}"
    if response.status_code >= 400:
        assert response["Content-Type"].startswith("application/problem+json"), (
            f"{request} -> {response.status_code} {response['Content-Type']}: {response.content[:200]!r}"
        )
        body = json.loads(response.content)
        assert isinstance(body.get("code"), str) and body["code"], f"{request} -> {body}"
        assert _snapshot() == before, f"{request} -> {response.status_code} changed state: {body}"


@FUZZ
@given(
    route=st.sampled_from(ROUTES),
    method=methods,
    body=bodies,
    content_type=content_types,
    query=queries,
    junk=st.none() | junk_segments,
    tail=st.text(max_size=30),
    authenticated=st.booleans(),
    idempotency_key=st.none() | st.sampled_from(["k-1", "k-2", "x" * 300, "\u0661"]),
)
def test_no_input_gives_a_5xx_or_a_non_problem_error_or_changes_state_on_an_error(
    world, route, method, body, content_type, query, junk, tail, authenticated, idempotency_key
):
    cache.clear()  # the public-endpoint rate limit would otherwise turn most later examples into 429s
    path = _path(route, world, junk, tail)
    headers: dict[str, str] = {}
    if authenticated:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {world['token']}"
    if idempotency_key is not None:
        headers["HTTP_IDEMPOTENCY_KEY"] = idempotency_key
    before = _snapshot()

    response = ServerClient().generic(
        method, path, body, content_type=content_type, QUERY_STRING=_query(query), **headers
    )

    _check(response, before, f"{method} {path}?{_query(query)} [{content_type}] {body[:120]!r}")


def _query(pairs: list[tuple[str, str]]) -> str:
    from urllib.parse import urlencode

    return urlencode(pairs)
