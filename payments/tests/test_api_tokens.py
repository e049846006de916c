"""Named API tokens on the API: scopes, client networks, revocation, the company's own token, "last used",
and every API view declaring its scope."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from invoices.models import Invoice
from payments import tokens
from payments.auth import ApiCredential, IsMerchant, required_scope
from payments.models import ApiToken, Company
from payments.selectors import api_token_get_by_token, company_get_by_token
from payments.tokens import ALL_SCOPES, SCOPES, api_token_revoke
from tests.factories import ApiTokenFactory

pytestmark = pytest.mark.django_db

INVOICES = "/api/invoices/v1/regular"
WITHDRAW = "/api/transactions/withdraw"
BALANCES = "/api/company/balances"
ANY_ID = uuid.uuid4()

# Every (method, path) of the API behind a token, with the one scope it needs. The walk test below checks
# that this table covers every view and method the URLconf has.
ENDPOINTS = [
    ("GET", INVOICES, "invoices:read"),
    ("POST", INVOICES, "invoices:write"),
    ("POST", f"{INVOICES}/{ANY_ID}/accept", "invoices:write"),
    ("POST", f"{INVOICES}/{ANY_ID}/refund", "withdrawals:write"),
    ("GET", "/api/transactions/withdrawals", "withdrawals:read"),
    ("GET", "/api/transactions/withdrawals/001-1", "withdrawals:read"),
    ("POST", WITHDRAW, "withdrawals:write"),
    ("GET", "/api/company/auto-withdrawals", "withdrawals:read"),
    ("PATCH", "/api/company/auto-withdrawals", "withdrawals:write"),
    ("GET", BALANCES, "balances:read"),
    ("POST", "/api/addresses/v1/static-deposits", "addresses:write"),
    ("GET", "/api/webhooks/events", "webhooks:read"),
    ("GET", f"/api/webhooks/events/{ANY_ID}", "webhooks:read"),
    ("POST", f"/api/webhooks/events/{ANY_ID}/redeliver", "webhooks:write"),
    ("GET", "/api/company/underpayment-limits", "settings:read"),
    ("PATCH", "/api/company/underpayment-limits", "settings:write"),
    ("PUT", "/api/company/settings/webhook-url", "settings:write"),
    ("PUT", "/api/company/settings/redirect-url", "settings:write"),
    ("POST", "/api/sandbox/deposits", "sandbox"),
    ("POST", "/api/sandbox/blocks", "sandbox"),
    ("POST", f"/api/sandbox/invoices/{ANY_ID}/expire", "sandbox"),
    ("POST", "/api/sandbox/withdrawals/001-1/reject", "sandbox"),
    ("GET", "/api/company/members", "team"),
    ("POST", "/api/company/members", "team"),
    ("PATCH", "/api/company/members/1", "team"),
    ("DELETE", "/api/company/members/1", "team"),
    ("GET", "/api/company/invitations", "team"),
    ("DELETE", f"/api/company/invitations/{ANY_ID}", "team"),
]


def client_for(secret: str, **defaults: Any) -> APIClient:
    client = APIClient(**defaults)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def call(client: APIClient, method: str, path: str, **extra: Any) -> Any:
    # An empty JSON body: the scope is checked before the body is read, so a 400 still says "allowed".
    return client.generic(
        method, path, "{}" if method != "GET" else "", content_type="application/json", **extra
    )


def assert_forbidden(response: Any, mentioning: str) -> None:
    assert response.status_code == 403, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "forbidden"
    assert mentioning in body["detail"]


# --- scopes ---------------------------------------------------------------------------------------------


def test_a_read_only_token_reads_but_cannot_create_an_invoice_or_withdraw(merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=["invoices:read", "withdrawals:read"])
    reader = client_for(issued.secret)

    created = reader.post(
        INVOICES, {"invoiceCurrency": "usd", "items": [{"name": "x", "price": 1}]}, format="json"
    )
    withdrawn = reader.post(WITHDRAW, [{"asset": "btc", "amount": "0.1", "to": "x"}], format="json")
    listed = reader.get(INVOICES)

    assert_forbidden(created, "invoices:write")
    assert_forbidden(withdrawn, "withdrawals:write")
    assert Invoice.objects.count() == 0
    assert listed.status_code == 200
    assert listed.json()["results"] == []


def test_a_write_token_creates_an_invoice_that_is_the_companys(merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=["invoices:write"])

    response = client_for(issued.secret).post(
        INVOICES, {"invoiceCurrency": "usd", "items": [{"name": "Lamp", "price": 10}]}, format="json"
    )

    assert response.status_code == 201
    assert Invoice.objects.get(pk=response.json()["id"]).company_id == merchant.company.pk


@pytest.mark.parametrize(("method", "path", "scope"), ENDPOINTS)
def test_each_endpoint_needs_exactly_its_scope(merchant, method, path, scope):
    only = ApiTokenFactory(company=merchant.company, name="only", scopes=[scope])
    others = ApiTokenFactory(company=merchant.company, name="others", scopes=sorted(ALL_SCOPES - {scope}))

    allowed = call(client_for(only.secret), method, path)
    refused = call(client_for(others.secret), method, path)
    company_token = call(client_for(merchant.public_token), method, path)

    assert allowed.status_code not in (401, 403), allowed.content
    assert_forbidden(refused, scope)
    assert company_token.status_code == allowed.status_code


def test_the_company_token_keeps_every_scope(merchant, api):
    for method, path, _ in ENDPOINTS:
        assert call(api, method, path).status_code not in (401, 403), (method, path)


def test_head_needs_the_scope_of_get(merchant):
    writer = ApiTokenFactory(company=merchant.company, scopes=["invoices:write"])
    reader = ApiTokenFactory(company=merchant.company, scopes=["invoices:read"])

    assert client_for(writer.secret).head(INVOICES).status_code == 403
    assert client_for(reader.secret).head(INVOICES).status_code == 200


def test_a_method_the_view_does_not_have_is_405_not_403(merchant):
    reader = ApiTokenFactory(company=merchant.company, scopes=["invoices:read"])

    response = client_for(reader.secret).delete(INVOICES)

    assert response.status_code == 405


class _Undeclared(APIView):
    permission_classes = [IsMerchant]

    def get(self, request: Request) -> None:  # pragma: no cover - never reached
        raise AssertionError("a view without a declared scope ran for a named token")


def test_a_view_without_a_declared_scope_refuses_named_tokens_but_not_the_company_token(merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=sorted(ALL_SCOPES))
    request = APIRequestFactory().get("/api/undeclared")
    view = _Undeclared()
    named = ApiCredential(company=merchant.company, token_id=issued.token.pk, scopes=ALL_SCOPES)
    drf_request = Request(request)
    drf_request._auth = named  # as the authenticator leaves it

    with pytest.raises(exceptions.PermissionDenied) as refused:
        IsMerchant().has_permission(drf_request, view)
    drf_request._auth = ApiCredential(company=merchant.company)

    assert "declares no scope" in str(refused.value)
    assert IsMerchant().has_permission(drf_request, view) is True


# --- every API view declares its scope -------------------------------------------------------------------

# Views of /api/ that need no token: the public invoice, the client's proceed (a token there only narrows
# it to the company's invoices), the schema and its pages, and the catch-all 404.
PUBLIC_ROUTES = {
    "api/invoices/v1/regular/<uuid:invoice_id>",
    "api/invoices/v1/regular/<uuid:invoice_id>/proceed",
    "api/schema/",
    "api/docs/",
    "api/redoc/",
    r"api/^[\s\S]*$",
}
HANDLERS = ("get", "post", "put", "patch", "delete")


def _routes(patterns: list[Any], prefix: str = "") -> list[tuple[str, Any]]:
    found = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            found += _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            found.append((prefix + str(pattern.pattern), pattern.callback))
    return found


def _api_views() -> list[tuple[str, Any]]:
    return [
        (route, callback)
        for route, callback in _routes(get_resolver().url_patterns)
        if route.startswith("api/")
    ]


def test_every_api_view_declares_exactly_one_known_scope_per_method():
    undeclared, public = [], set()
    for route, callback in _api_views():
        view = getattr(callback, "cls", None)
        if route in PUBLIC_ROUTES:
            public.add(route)
            continue
        assert view is not None, f"{route}: not a DRF view, and not listed as public"
        assert IsMerchant in view.permission_classes and AllowAny not in view.permission_classes, route
        declared = dict(getattr(view, "required_scopes", {}))
        handlers = {name.upper() for name in HANDLERS if hasattr(view, name)}
        assert set(declared) <= handlers, f"{route}: a scope for a method the view does not have"
        for method in sorted(handlers):
            if declared.get(method) not in SCOPES:
                undeclared.append(f"{method} {route}: {declared.get(method)!r}")

    assert undeclared == []
    assert public == PUBLIC_ROUTES  # a route listed here that disappeared is a stale exception


def test_the_public_routes_really_need_no_token():
    for route, callback in _api_views():
        view = getattr(callback, "cls", None)
        if route in PUBLIC_ROUTES and view is not None and not route.startswith("api/schema"):
            assert AllowAny in view.permission_classes or not view.authentication_classes, route


def test_the_endpoint_table_covers_every_declared_view_and_method():
    declared = set()
    for route, callback in _api_views():
        view = getattr(callback, "cls", None)
        if route not in PUBLIC_ROUTES:
            declared |= {(view, method) for method in getattr(view, "required_scopes", {})}

    tested = {(resolve(path).func.cls, method) for method, path, _ in ENDPOINTS}  # type: ignore[attr-defined]

    assert tested == declared
    for method, path, scope in ENDPOINTS:
        assert required_scope(resolve(path).func.cls, method) == scope  # type: ignore[attr-defined]


# --- client networks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("networks", "remote", "allowed"),
    [
        (["203.0.113.0/24"], "203.0.113.7", True),
        (["203.0.113.0/24"], "198.51.100.7", False),
        (["203.0.113.9"], "203.0.113.9", True),
        (["203.0.113.9"], "203.0.113.10", False),
        (["2001:db8::/32"], "2001:db8:1::5", True),
        (["2001:db8::/32"], "2001:db9::5", False),
        (["203.0.113.0/24"], "::ffff:203.0.113.7", True),  # an IPv4 client on a dual-stack listener
        (["203.0.113.0/24"], "2001:db8::1", False),
        (["2001:db8::/32", "203.0.113.0/24"], "203.0.113.200", True),
        (["203.0.113.0/24"], "", False),
        (["203.0.113.0/24"], "not-an-address", False),
    ],
)
def test_a_token_is_accepted_only_from_its_networks(merchant, networks, remote, allowed):
    issued = ApiTokenFactory(company=merchant.company, scopes=["balances:read"], allowed_networks=networks)

    response = client_for(issued.secret, REMOTE_ADDR=remote).get(BALANCES)

    if allowed:
        assert response.status_code == 200
    else:
        assert_forbidden(response, "may not be used from")


@pytest.mark.parametrize(
    ("proxies", "forwarded", "allowed"),
    [
        (0, "203.0.113.7", False),  # no trusted proxy: the header is the client's word and is ignored
        (1, "203.0.113.7", True),
        (1, "198.51.100.7", False),
        (1, "203.0.113.7, 198.51.100.7", False),  # the client's own first entry is not believed
        (2, "203.0.113.7, 10.0.0.9", True),
        (1, "garbage", False),
    ],
)
def test_behind_proxies_the_network_is_checked_on_the_address_they_saw(
    merchant, settings, proxies, forwarded, allowed
):
    settings.NUM_PROXIES = proxies
    issued = ApiTokenFactory(
        company=merchant.company, scopes=["balances:read"], allowed_networks=["203.0.113.0/24"]
    )
    client = client_for(issued.secret, REMOTE_ADDR="10.0.0.1")

    response = client.get(BALANCES, HTTP_X_FORWARDED_FOR=forwarded)

    assert response.status_code == (200 if allowed else 403)


def test_a_refused_address_does_not_mark_the_token_used(merchant):
    issued = ApiTokenFactory(
        company=merchant.company, scopes=["balances:read"], allowed_networks=["203.0.113.0/24"]
    )

    client_for(issued.secret, REMOTE_ADDR="198.51.100.7").get(BALANCES)

    issued.token.refresh_from_db()
    assert issued.token.last_used_at is None


# --- revocation and unknown tokens ----------------------------------------------------------------------


def test_a_revoked_token_is_401(merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=["balances:read"])
    client = client_for(issued.secret)
    assert client.get(BALANCES).status_code == 200

    api_token_revoke(company_id=merchant.company.pk, token_id=issued.token.pk)
    response = client.get(BALANCES)

    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "unauthorized"


@pytest.mark.parametrize("secret", ["kassa_tk_", "kassa_tk_unknown", "kassa_tk_" + "A" * 43])
def test_an_unknown_named_token_is_401(merchant, secret):
    response = client_for(secret).get(BALANCES)

    assert response.status_code == 401


def test_another_companys_token_reads_only_its_own_company(merchant, other_merchant):
    issued = ApiTokenFactory(company=other_merchant.company, scopes=["invoices:read"])
    client_for(merchant.public_token).post(
        INVOICES, {"invoiceCurrency": "usd", "items": [{"name": "Lamp", "price": 10}]}, format="json"
    )

    listed = client_for(issued.secret).get(INVOICES)

    assert listed.json()["count"] == 0


def test_the_token_is_stored_only_as_a_hash(merchant):
    issued = ApiTokenFactory(company=merchant.company)

    row = ApiToken.objects.values().get(pk=issued.token.pk)

    assert issued.secret.startswith("kassa_tk_")
    assert all(issued.secret not in str(value) for value in row.values())
    assert row["token_prefix"] == issued.secret[:13]


# --- one query, "last used" at most once a minute --------------------------------------------------------


def _token_queries(queries: list[dict[str, str]]) -> list[str]:
    return [
        q["sql"] for q in queries if "payments_apitoken" in q["sql"] or 'FROM "payments_company"' in q["sql"]
    ]


def test_authentication_is_one_query_and_a_recent_stamp_writes_nothing(merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=["balances:read"])
    client = client_for(issued.secret)
    client.get(BALANCES)  # stamps "last used"

    with CaptureQueriesContext(connection) as captured:
        assert client.get(BALANCES).status_code == 200

    touching = _token_queries(captured.captured_queries)
    assert len(touching) == 1 and touching[0].lstrip().upper().startswith("SELECT")


def test_last_used_is_written_at_most_once_a_minute(merchant, monkeypatch):
    issued = ApiTokenFactory(company=merchant.company, scopes=["balances:read"])
    client = client_for(issued.secret)
    start = timezone.now()
    monkeypatch.setattr(tokens, "_now", lambda: start)
    client.get(BALANCES)

    monkeypatch.setattr(tokens, "_now", lambda: start + timedelta(seconds=59))
    with CaptureQueriesContext(connection) as within:
        client.get(BALANCES)
    issued.token.refresh_from_db()
    stamped_within = issued.token.last_used_at
    monkeypatch.setattr(tokens, "_now", lambda: start + timedelta(seconds=61))
    client.get(BALANCES)
    issued.token.refresh_from_db()

    assert stamped_within == start
    assert not [q for q in within.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]
    assert issued.token.last_used_at == start + timedelta(seconds=61)


def test_the_company_token_gets_a_last_used_without_changing_updated_at(merchant, api, monkeypatch):
    before = Company.objects.get(pk=merchant.company.pk)
    start = timezone.now() + timedelta(hours=1)
    monkeypatch.setattr(tokens, "_now", lambda: start)

    api.get(BALANCES)
    monkeypatch.setattr(tokens, "_now", lambda: start + timedelta(seconds=30))
    api.get(BALANCES)

    after = Company.objects.get(pk=merchant.company.pk)
    assert before.token_last_used_at is None
    assert after.token_last_used_at == start
    assert after.updated_at == before.updated_at


def test_a_stale_stamp_is_written_once_even_when_two_requests_read_it(merchant, monkeypatch):
    issued = ApiTokenFactory(company=merchant.company)
    token = ApiToken.objects.get(pk=issued.token.pk)  # both "requests" read last_used_at = None
    later = timezone.now()
    monkeypatch.setattr(tokens, "_now", lambda: later)
    tokens.api_token_touch(token)

    monkeypatch.setattr(tokens, "_now", lambda: later + timedelta(seconds=5))
    tokens.api_token_touch(token)

    token.refresh_from_db()
    assert token.last_used_at == later


def _columns(instance: Any) -> dict[str, Any]:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def test_the_hand_built_token_reads_give_what_the_orm_gives(merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=["sandbox"], allowed_networks=["2001:db8::/32"])
    api_token_revoke(
        company_id=merchant.company.pk, token_id=ApiTokenFactory(company=merchant.company).token.pk
    )
    orm = ApiToken.objects.select_related("company__owner").get(pk=issued.token.pk)

    named = api_token_get_by_token(issued.secret)
    company = company_get_by_token(merchant.public_token)

    assert named is not None and company is not None
    assert _columns(named) == _columns(orm)
    assert _columns(named.company) == _columns(orm.company) == _columns(company)
    assert _columns(named.company.owner) == _columns(orm.company.owner) == _columns(company.owner)
    assert named.scopes == ["sandbox"] and named.allowed_networks == ["2001:db8::/32"]
    assert company.token_rotated_at.tzinfo is not None and isinstance(company.allowed_assets, list)
    assert api_token_get_by_token(merchant.public_token) is None
    assert company_get_by_token(issued.secret) is None
