"""The one helper for moving money in tests: pay an invoice or an address on the sandbox chain, mine
blocks, fund a balance. Every test that pays or mines uses these (through the services, or through the
sandbox API when the test is about HTTP)."""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

from chains.simulator import sandbox_deposit, sandbox_mine
from invoices.models import Invoice
from payments.ledger import ledger_credit
from payments.models import Company, LedgerEntry, SandboxTransaction

_funding = itertools.count(1)


def pay_address(
    code: str,
    address: str,
    amount: Decimal | str,
    *,
    tag: str = "",
    outcome: str = "confirm",
    company: Company | None = None,
) -> SandboxTransaction:
    """A transfer of `amount` to `address` (and tag) on the sandbox chain of `code`: seen at once. With
    `company`, only that company's addresses are accepted (as the sandbox API does)."""
    return sandbox_deposit(
        company=company, code=code, address=address, tag=tag, amount=Decimal(amount), outcome=outcome
    )


def pay(invoice: Invoice, amount: Decimal | str, *, outcome: str = "confirm", blocks: int = 0) -> Invoice:
    """Send `amount` to the (filled) invoice's own address, mine `blocks` blocks; the invoice, re-read."""
    invoice.refresh_from_db()
    assert invoice.deposit_address is not None, "fill the invoice first"
    address = invoice.deposit_address
    pay_address(invoice.payment_code, address.address, amount, tag=address.tag, outcome=outcome)
    if blocks:
        mine(invoice.payment_code, blocks)
    invoice.refresh_from_db()
    return invoice


def mine(code: str | Invoice | None = None, count: int = 1) -> dict[str, int]:
    """`count` blocks on the sandbox chain of `code` (or of an invoice's code; every chain when None)."""
    if isinstance(code, Invoice):
        code = code.payment_code
    return sandbox_mine(count=count, codes=[code] if code else None)


def fund(company: Company, code: str, amount: Decimal | str) -> LedgerEntry:
    """Credit the company's balance as an operator adjustment would."""
    return ledger_credit(
        company_id=company.pk,
        code=code,
        amount=Decimal(amount),
        kind=LedgerEntry.Kind.ADJUSTMENT,
        reference=f"test-funding:{next(_funding)}",
    )


# --- through the sandbox API (for tests about HTTP) -----------------------------------------------------


def api_pay(client: Any, address: dict[str, Any], amount: str, outcome: str = "confirm") -> Any:
    """POST /api/sandbox/deposits to an `address` object as the API returns it (address, tag, asset)."""
    body = {"address": address["address"], "asset": address["asset"], "amount": amount, "outcome": outcome}
    if address.get("tag"):
        body["tag"] = address["tag"]
    return client.post("/api/sandbox/deposits", body, format="json")


def api_mine(client: Any, count: int = 1) -> Any:
    """POST /api/sandbox/blocks: `count` blocks on every sandbox chain."""
    return client.post("/api/sandbox/blocks", {"count": count}, format="json")
