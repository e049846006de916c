"""Arranging invoices for the browser tests through the real services (no HTTP, no API token)."""

from __future__ import annotations

import io
from decimal import Decimal

from chains.simulator import sandbox_deposit, sandbox_mine
from invoices.models import Invoice
from invoices.services import ItemInput, invoice_create, invoice_fill
from payments.models import Company

ITEMS = [
    ItemInput(name="Espresso beans, 1 kg", price=Decimal("60")),
    ItemInput(name="Ceramic pour-over dripper", price=Decimal("45")),
    ItemInput(name="Welcome discount", price=Decimal("-5")),
]


def make_invoice(company: Company, *, fixed: str | None = None, redirect_url: str | None = None) -> Invoice:
    return invoice_create(
        company=company,
        invoice_currency="usd",
        items=ITEMS,
        payment_currency=fixed,
        redirect_url=redirect_url,
    )


def fill(invoice: Invoice, code: str = "btc") -> Invoice:
    return invoice_fill(invoice_id=invoice.pk, client_email="client@example.com", payment_currency=code)


def pay(invoice: Invoice, amount: str, outcome: str = "confirm") -> None:
    invoice.refresh_from_db()
    assert invoice.deposit_address is not None
    sandbox_deposit(
        company=None,
        code=invoice.payment_code,
        address=invoice.deposit_address.address,
        tag=invoice.deposit_address.tag,
        amount=Decimal(amount),
        outcome=outcome,
    )


def mine(invoice: Invoice, count: int) -> None:
    sandbox_mine(count=count, codes=[invoice.payment_code])


def decode_qr(png: bytes) -> list[str]:
    import zxingcpp
    from PIL import Image

    return [result.text for result in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))]
