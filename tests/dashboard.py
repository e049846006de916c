"""Shared arrangements of the dashboard tests (`test_dashboard_*.py` of each app); no tests of its own.

`Dash` is Django's test client with CSRF enforced, as a browser sees the site: every POST carries the token
from the csrftoken cookie, which a rendered form sets. Arrangements are made by tests/factories.py and
tests/chain.py, through the real services.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from payments.models import Company
from tests.factories import PASSWORD

CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Dash:
    """A CSRF-enforcing client. post() sends the token a browser would; raw_post() sends none."""

    def __init__(self, **defaults: Any) -> None:
        self.client = Client(enforce_csrf_checks=True, **defaults)

    def token(self) -> str:
        if "csrftoken" not in self.client.cookies:
            self.client.get("/dashboard/login/")  # any page with a form sets the cookie
            if "csrftoken" not in self.client.cookies:
                self.client.get("/dashboard/")
        return str(self.client.cookies["csrftoken"].value)

    def get(self, path: str, data: dict[str, Any] | None = None, **extra: Any) -> Any:
        return self.client.get(path, data, **extra)

    def post(self, path: str, data: dict[str, Any] | None = None, **extra: Any) -> Any:
        body = dict(data or {})
        body["csrfmiddlewaretoken"] = self.token()
        return self.client.post(path, body, **extra)

    def raw_post(self, path: str, data: dict[str, Any] | None = None, **extra: Any) -> Any:
        return self.client.post(path, data or {}, **extra)

    def login(self, email: str, password: str = PASSWORD, **extra: Any) -> Any:
        return self.post("/dashboard/login/", {"username": email, "password": password}, **extra)


def text(response: Any) -> str:
    return str(response.content.decode())


@pytest.fixture(autouse=True)
def dashboard_rates(settings, tmp_path):  # type: ignore[no-untyped-def]
    """Round static rates (exact amounts), no rates file, and a fresh cache (login counters live there)."""
    settings.RATES_PROVIDER = "static"
    settings.RATES_STATIC_USD = {**settings.RATES_STATIC_USD, "btc": "100000", "eth": "2500", "ton": "5"}
    settings.RATES_FILE = str(tmp_path / "no-rates.json")
    settings.INVOICE_FEE_PERCENT = "1"
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def dash(merchant):  # type: ignore[no-untyped-def]
    """The merchant's browser, logged in."""
    client = Dash()
    client.client.force_login(merchant.company.owner)
    return client


@pytest.fixture
def anon_dash(db):  # type: ignore[no-untyped-def]
    return Dash()


def company_of(merchant: Any) -> Company:
    return Company.objects.get(pk=merchant.company.pk)


def older_link(html: str) -> str:
    """The href of a list page's "Older →" link (keyset pagination: `?after=<position>`, filters kept)."""
    match = re.search(r'href="([^"]*)" rel="next"', html)
    assert match, "the page has no Older link"
    return match.group(1).replace("&amp;", "&")
