"""What the browser tests share: the items of their invoices (made by tests.factories.InvoiceFactory, paid
and mined by tests.chain, through the real services) and reading a QR code."""

from __future__ import annotations

import io
from decimal import Decimal

from invoices.services import ItemInput

ITEMS = [
    ItemInput(name="Espresso beans, 1 kg", price=Decimal("60")),
    ItemInput(name="Ceramic pour-over dripper", price=Decimal("45")),
    ItemInput(name="Welcome discount", price=Decimal("-5")),
]


def decode_qr(png: bytes) -> list[str]:
    import zxingcpp
    from PIL import Image

    return [result.text for result in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))]
