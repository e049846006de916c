"""Arranging invoices for the browser tests through the real services (no HTTP, no API token)."""

from __future__ import annotations

import io
from decimal import Decimal

from invoices.models import Invoice
from invoices.services import ItemInput, invoice_fill
from payments.models import Company
from tests.factories import InvoiceFactory

ITEMS = [
    ItemInput(name="Espresso beans, 1 kg", price=Decimal("60")),
    ItemInput(name="Ceramic pour-over dripper", price=Decimal("45")),
    ItemInput(name="Welcome discount", price=Decimal("-5")),
]


def make_invoice(company: Company, *, fixed: str | None = None, redirect_url: str | None = None) -> Invoice:
    return InvoiceFactory(company=company, items=ITEMS, payment_currency=fixed, redirect_url=redirect_url)


def fill(invoice: Invoice, code: str = "btc") -> Invoice:
    return invoice_fill(invoice_id=invoice.pk, client_email="client@example.com", payment_currency=code)


def decode_qr(png: bytes) -> list[str]:
    import zxingcpp
    from PIL import Image

    return [result.text for result in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))]
