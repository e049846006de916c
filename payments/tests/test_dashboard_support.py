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

from chains.simulator import sandbox_deposit, sandbox_mine
from invoices.models import Invoice
from invoices.services import ItemInput, invoice_create, invoice_fill
from payments.models import Company

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
    return invoice_create(
        company=company,
        invoice_currency="usd",
        items=[ItemInput(name="Coffee beans", price=Decimal(total))],
        **kwargs,
    )


def fill(invoice: Invoice, code: str = "btc", email: str = "client@example.com") -> Invoice:
    return invoice_fill(invoice_id=invoice.pk, client_email=email, payment_currency=code)


def pay(invoice: Invoice, amount: str, *, blocks: int = 2) -> Invoice:
    """Send `amount` to the invoice's address on the sandbox chain and mine `blocks` blocks."""
    invoice.refresh_from_db()
    assert invoice.deposit_address is not None
    sandbox_deposit(
        company=None,
        code=invoice.payment_code,
        address=invoice.deposit_address.address,
        tag=invoice.deposit_address.tag,
        amount=Decimal(amount),
    )
    if blocks:
        sandbox_mine(count=blocks, codes=[invoice.payment_code])
    invoice.refresh_from_db()
    return invoice


def wrong_invoice(company: Company, code: str = "btc") -> Invoice:
    """An invoice paid too little and confirmed: status wrong (0.00101 btc due for 100 usd + 1 %)."""
    invoice = fill(make_invoice(company), code)
    paid = {"btc": "0.0006", "eth": "0.02", "ton": "10"}[code]
    invoice = pay(invoice, paid, blocks=max(2, _confirmations(code)))
    assert invoice.status == Invoice.Status.WRONG, invoice.status
    return invoice


BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


def fund(company: Company, code: str, amount: str) -> None:
    from payments.ledger import ledger_credit
    from payments.models import LedgerEntry

    ledger_credit(
        company_id=company.pk,
        code=code,
        amount=Decimal(amount),
        kind=LedgerEntry.Kind.ADJUSTMENT,
        reference=f"test-funding:{code}:{amount}:{Company.objects.count()}:{LedgerEntry.objects.count()}",
    )


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
