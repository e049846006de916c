"""The per-token request budget (API_TOKEN_RATE): counted per token, the company's own token per company,
in fixed windows of the shared cache (Redis when REDIS_URL is set); over it, 429 with Retry-After."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.core.checks import run_checks
from rest_framework.test import APIClient

from core.checks import TAG
from payments.api import authentication
from payments.auth import check_api_token_rate, parse_rate
from tests.factories import ApiTokenFactory

pytestmark = pytest.mark.django_db

BALANCES = "/api/company/balances"
WINDOW_START = 1_800_000_000  # a multiple of 60: one minute window starts here


@pytest.fixture(autouse=True)
def budget(settings, monkeypatch):  # type: ignore[no-untyped-def]
    """Three requests a minute, a clock 15 s into a window, and no counts of an earlier test."""
    settings.API_TOKEN_RATE = "3/min"
    clock = {"now": WINDOW_START + 15.0}
    monkeypatch.setattr(authentication, "_clock", lambda: clock["now"])
    cache.clear()
    yield clock
    cache.clear()


def client_for(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def spend(client: APIClient, times: int) -> list[int]:
    return [client.get(BALANCES).status_code for _ in range(times)]


def test_over_the_budget_is_429_problem_with_retry_after(merchant):
    client = client_for(ApiTokenFactory(company=merchant.company, scopes=["balances:read"]).secret)

    statuses = spend(client, 3)
    over = client.get(BALANCES)

    assert statuses == [200, 200, 200]
    assert over.status_code == 429
    assert over["Content-Type"] == "application/problem+json"
    assert over.json()["code"] == "rate_limited"
    assert over["Retry-After"] == "45"  # the rest of the window


def test_the_budget_comes_back_in_the_next_window(merchant, budget):
    client = client_for(ApiTokenFactory(company=merchant.company, scopes=["balances:read"]).secret)
    spend(client, 4)

    budget["now"] = WINDOW_START + 59.5
    still = client.get(BALANCES)
    budget["now"] = WINDOW_START + 60.0
    again = spend(client, 3)

    assert still.status_code == 429
    assert still["Retry-After"] == "1"  # never 0: an immediate retry would only be refused again
    assert again == [200, 200, 200]


def test_two_tokens_have_their_own_budgets(merchant):
    first = client_for(ApiTokenFactory(company=merchant.company, scopes=["balances:read"]).secret)
    second = client_for(ApiTokenFactory(company=merchant.company, scopes=["balances:read"]).secret)
    spend(first, 3)

    assert first.get(BALANCES).status_code == 429
    assert spend(second, 3) == [200, 200, 200]


def test_the_company_token_has_a_budget_of_its_own_per_company(merchant, other_merchant, api):
    named = client_for(ApiTokenFactory(company=merchant.company, scopes=["balances:read"]).secret)
    spend(api, 3)

    assert api.get(BALANCES).status_code == 429
    assert named.get(BALANCES).status_code == 200
    assert client_for(other_merchant.public_token).get(BALANCES).status_code == 200


def test_refused_scopes_and_bad_tokens_do_not_spend_the_budget(merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=["balances:read"])
    client = client_for(issued.secret)

    for _ in range(5):
        client.get("/api/company/underpayment-limits")  # 403: not its scope
        client_for("kassa_tk_wrong").get(BALANCES)  # 401

    assert spend(client, 3) == [200, 200, 200]


def test_the_public_invoice_endpoints_are_not_counted_against_a_token(merchant, api):
    created = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "x", "price": 1}]},
        format="json",
    )

    statuses = [api.get(f"/api/invoices/v1/regular/{created.json()['id']}").status_code for _ in range(4)]

    assert statuses == [200, 200, 200, 200]
    assert spend(api, 2) == [200, 200]  # the create was the first of three


def test_an_empty_rate_is_no_limit(merchant, settings):
    settings.API_TOKEN_RATE = ""
    client = client_for(ApiTokenFactory(company=merchant.company, scopes=["balances:read"]).secret)

    assert set(spend(client, 10)) == {200}


@pytest.mark.redis
def test_on_redis_the_budget_is_one_round_trip_and_expires_with_its_window(merchant, monkeypatch):
    import redis

    issued = ApiTokenFactory(company=merchant.company, scopes=["balances:read"])
    client = client_for(issued.secret)
    client.get(BALANCES)  # loads the script into Redis once
    sent: list[Any] = []
    real = redis.Redis.execute_command

    def counting(self: Any, *args: Any, **options: Any) -> Any:
        sent.append(args[0])
        return real(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", counting)
    assert client.get(BALANCES).status_code == 200
    monkeypatch.setattr(redis.Redis, "execute_command", real)

    assert sent == ["EVALSHA"]
    key = cache.make_and_validate_key(f"api-budget:token:{issued.token.pk}:{WINDOW_START}")
    store: Any = cache._cache.get_client(key, write=True)  # type: ignore[attr-defined]
    assert int(store.get(key)) == 2
    assert 0 < store.ttl(key) <= 61


# --- the setting ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("600/min", (600, 60)),
        ("10/s", (10, 1)),
        ("5000/hour", (5000, 3600)),
        ("1/day", (1, 86400)),
        ("", None),
    ],
)
def test_rates_are_read_as_requests_per_period(text, parsed):
    assert parse_rate(text) == parsed


@pytest.mark.parametrize("text", ["600", "0/min", "-1/min", "1.5/min", "600/fortnight", "many/min", "/min"])
def test_a_malformed_rate_is_refused_at_start(settings, text):
    settings.API_TOKEN_RATE = text

    errors = check_api_token_rate()
    deploy = run_checks(tags=[TAG], include_deployment_checks=True)

    assert [error.id for error in errors] == ["kassa.E031"]
    assert "kassa.E031" in {message.id for message in deploy}  # what production runs at start
    with pytest.raises(ValueError, match="is not a rate"):
        parse_rate(text)


def test_the_default_rate_passes_the_check(settings):
    settings.API_TOKEN_RATE = "600/min"

    assert check_api_token_rate() == []
