"""Which address the throttles count: REMOTE_ADDR with NUM_PROXIES=0, else the X-Forwarded-For hop the
outermost trusted proxy wrote. Entries a client puts in front of it never decide (docs/operations.md, TLS
and proxies), and production refuses NUM_PROXIES=0 behind the proxy it trusts (kassa.E009)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client, RequestFactory
from rest_framework.request import Request

from core import throttle
from invoices.api.views import PublicInvoiceThrottle
from payments.checks import check_num_proxies
from tests.factories import PASSWORD
from tests.test_production_settings import assert_refused, check_deploy, production_env

ROOT = Path(__file__).resolve().parent.parent
CLIENT, OTHER_CLIENT = "203.0.113.7", "198.51.100.20"
FORGED = ["1.1.1.1", "9.9.9.9", "203.0.113.99", "10.0.0.1", "not-an-address"]


def _seen_by_gunicorn(proxies: int, client: str, forged: str | None = None) -> dict[str, str]:
    """REMOTE_ADDR and X-Forwarded-For as gunicorn receives a request of `client`, which sent its own
    X-Forwarded-For (`forged`), through the documented setup for `proxies` proxies."""
    if proxies == 0:  # no proxy: the client talks to gunicorn and its header is only its claim
        return {"REMOTE_ADDR": client, **({"HTTP_X_FORWARDED_FOR": forged} if forged else {})}
    if proxies == 1:  # nginx on the same host overwrites the header with the address it saw
        return {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": client}
    # A load balancer appends the client's address to whatever came in; nginx appends the balancer's.
    hops = [*([forged] if forged else []), client, "10.0.0.5"]
    return {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": ", ".join(hops)}


@pytest.fixture
def proxies(request, settings):  # type: ignore[no-untyped-def]
    settings.NUM_PROXIES = request.param
    # DRF's throttles read their own copy (config/settings/base.py sets both from the one variable).
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": request.param}
    cache.clear()
    yield request.param
    cache.clear()


@pytest.mark.parametrize("proxies", [0, 1, 2], indirect=True)
@pytest.mark.parametrize("forged", [None, *FORGED])
def test_the_throttles_key_on_the_client_whatever_it_forges(proxies, forged):
    request = RequestFactory().get("/", **_seen_by_gunicorn(proxies, CLIENT, forged))
    invoice_throttle = PublicInvoiceThrottle()

    assert throttle.client_ip(request) == CLIENT
    assert invoice_throttle.get_ident(Request(request)) == CLIENT


@pytest.mark.parametrize("proxies", [1, 2], indirect=True)
def test_an_appending_proxy_still_yields_the_address_it_saw(proxies):
    # The outermost proxy appends instead of overwriting: the client's own header stays in front.
    hops = ["1.1.1.1", CLIENT, *(["10.0.0.5"] if proxies == 2 else [])]
    request = RequestFactory().get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=", ".join(hops))

    assert throttle.client_ip(request) == CLIENT


@pytest.mark.parametrize("proxies", [1], indirect=True)
def test_with_gunicorn_reachable_directly_the_client_picks_its_address(proxies):
    # Why gunicorn must listen where only the proxy reaches it: nothing overwrote this header.
    request = RequestFactory().get("/", REMOTE_ADDR=CLIENT, HTTP_X_FORWARDED_FOR="192.0.2.44")

    assert throttle.client_ip(request) == "192.0.2.44"


@pytest.mark.parametrize("proxies", [0], indirect=True)
def test_with_no_proxy_setting_behind_a_proxy_every_client_is_the_proxy(proxies):
    one = RequestFactory().get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=CLIENT)
    other = RequestFactory().get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=OTHER_CLIENT)

    assert throttle.client_ip(one) == throttle.client_ip(other) == "127.0.0.1"


@pytest.mark.django_db
@pytest.mark.parametrize("proxies", [0, 1, 2], indirect=True)
def test_the_log_in_lock_follows_the_client_through_every_forged_hop(proxies, merchant):
    for forged in FORGED:  # five failures, each with another made-up leftmost hop
        attacker = Client(**_seen_by_gunicorn(proxies, CLIENT, forged))
        assert (
            attacker.post("/dashboard/login/", {"username": "owner@acme.test", "password": "x"}).status_code
            == 200
        )

    attacker = Client(**_seen_by_gunicorn(proxies, CLIENT, "5.5.5.5"))
    owner = Client(**_seen_by_gunicorn(proxies, OTHER_CLIENT, "5.5.5.5"))
    locked = attacker.post("/dashboard/login/", {"username": "owner@acme.test", "password": PASSWORD})
    elsewhere = owner.post("/dashboard/login/", {"username": "owner@acme.test", "password": PASSWORD})

    assert locked.status_code == 429
    assert elsewhere.status_code == 302


@pytest.mark.django_db
@pytest.mark.parametrize("proxies", [0, 1, 2], indirect=True)
def test_the_public_rate_limit_follows_the_client_through_every_forged_hop(proxies, api, settings):
    from rest_framework.settings import api_settings

    created = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "Lamp", "price": 1}]},
        format="json",
    ).json()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"invoice_public": "3/min"},
    }
    PublicInvoiceThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    path = f"/api/invoices/v1/regular/{created['id']}"
    try:
        codes = [
            Client(**_seen_by_gunicorn(proxies, CLIENT, forged)).get(path).status_code
            for forged in FORGED[:4]
        ]
        other = Client(**_seen_by_gunicorn(proxies, OTHER_CLIENT, FORGED[0])).get(path)
    finally:
        PublicInvoiceThrottle.THROTTLE_RATES = {"invoice_public": "120/min"}

    assert codes == [200, 200, 200, 429]
    assert other.status_code == 200


# --- production refuses what it can see ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("proxy_header", "proxies", "refused"),
    [
        (("HTTP_X_FORWARDED_PROTO", "https"), 0, True),
        (("HTTP_X_FORWARDED_PROTO", "https"), 1, False),
        (("HTTP_X_FORWARDED_PROTO", "https"), 2, False),
        (("HTTP_X_FORWARDED_PROTO", "https"), -1, True),
        (None, 0, False),  # development: no proxy, nothing trusted
    ],
)
def test_num_proxies_check(settings, proxy_header, proxies, refused):
    settings.SECURE_PROXY_SSL_HEADER = proxy_header
    settings.NUM_PROXIES = proxies

    errors = check_num_proxies()

    assert [error.id for error in errors] == (["kassa.E009"] if refused else [])
    assert all("NUM_PROXIES" in error.hint for error in errors if error.hint)


@pytest.mark.parametrize("value", ["0", None])
def test_production_refuses_to_start_without_num_proxies(tmp_path, value):
    result = check_deploy(production_env(tmp_path, NUM_PROXIES=value))

    assert_refused(result, "kassa.E009", "NUM_PROXIES")


def test_the_documented_setup_binds_gunicorn_to_loopback_behind_an_overwriting_proxy():
    operations = (ROOT / "docs" / "operations.md").read_text()
    production = operations.split("\n## Production\n", 1)[1].split("\n## Configuration\n", 1)[0]

    assert "--bind 127.0.0.1:8000" in production
    assert "--bind 0.0.0.0" not in production
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in production
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in production
    assert "export NUM_PROXIES=1" in production
