"""Shared arrangements of the dashboard tests (payments/tests/test_dashboard_*.py); no tests of its own.

`Dash` is Django's test client with CSRF enforced, as a browser sees the site: every POST carries the token
from the csrftoken cookie, which a rendered form sets. Arrangements go through the real services.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from invoices.models import Invoice
from invoices.services import ItemInput, invoice_fill
from payments.models import Company
from tests import chain
from tests.factories import InvoiceFactory

PASSWORD = "correct horse battery"  # the root conftest's merchants
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


def make_invoice(company: Company, *, total: str = "100", **kwargs: Any) -> Invoice:
    return InvoiceFactory(
        company=company, items=[ItemInput(name="Coffee beans", price=Decimal(total))], **kwargs
    )


def fill(invoice: Invoice, code: str = "btc", email: str = "client@example.com") -> Invoice:
    return invoice_fill(invoice_id=invoice.pk, client_email=email, payment_currency=code)


def pay(invoice: Invoice, amount: str, *, blocks: int = 2) -> Invoice:
    """Pay and confirm (2 blocks unless told): the dashboard tests mostly want settled payments."""
    return chain.pay(invoice, amount, blocks=blocks)


def wrong_invoice(company: Company, code: str = "btc") -> Invoice:
    """An invoice paid too little and confirmed: status wrong (0.00101 btc due for 100 usd + 1 %)."""
    invoice = fill(make_invoice(company), code)
    paid = {"btc": "0.0006", "eth": "0.02", "ton": "10"}[code]
    invoice = pay(invoice, paid, blocks=max(2, _confirmations(code)))
    assert invoice.status == Invoice.Status.WRONG, invoice.status
    return invoice


BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


fund = chain.fund


def funded_withdrawal(company: Company, amount: str = "0.001") -> Any:
    """A btc withdrawal accepted through the service (0.0001 network fee on top)."""
    from withdrawals.rules import WithdrawalItem
    from withdrawals.services import withdrawal_request

    fund(company, "btc", "0.01")
    item = WithdrawalItem(asset="btc", to=BTC_ADDRESS, amount=Decimal(amount), tag="")
    return withdrawal_request(company=company, items=[item])[0]


def _confirmations(code: str) -> int:
    from payments.assets import get_asset

    return get_asset(code).confirmations
