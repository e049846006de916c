"""One body builder per family, keys in the documented order (docs/api.md), types per docs/decisions.md.

The builders return ordered dicts; `core.jsonutil.dumps` writes them compactly with Decimals as raw
numbers where the API reference types a number. A payment on the sandbox chain (simulated money) carries one
more key after the documented ones, `"sandbox": true`; real payments never have it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from core.money import number_text

INVOICE_MESSAGES = {
    "created": "Invoice created",
    "pending": "Waiting for the client's payment",
    "processing": "Payment received, waiting for confirmation",
    "done": "Invoice paid",
    "wrong": "Payment lower than the invoice amount",
    "refunded": "Invoice refunded",
    "closed": "Invoice closed",
}
WITHDRAWAL_STATUSES = ("processing", "done", "rejected")
DEPOSIT_STATUSES = ("processing", "done", "failed", "frozen")


def _mark_sandbox(body: dict[str, Any], sandbox: bool) -> dict[str, Any]:
    if sandbox:
        body["sandbox"] = True  # additive, last: the documented keys keep their order
    return body


def invoice_body(*, invoice_id: str, status: str, sandbox: bool = False) -> dict[str, Any]:
    """docs/api.md: invoiceId, status, message."""
    body = {"invoiceId": invoice_id, "status": status, "message": INVOICE_MESSAGES[status]}
    return _mark_sandbox(body, sandbox)


def withdrawal_body(
    *,
    status: str,
    asset: str,
    dchain: str,
    amount: Decimal,
    fee: Decimal,
    to: str,
    tx_hash: str,
    uid: str,
    sandbox: bool = False,
) -> dict[str, Any]:
    """docs/api.md: type, status, asset, dchain, amount (number), fee (string), to, txHash, uid.

    `txHash` is "" in the first processing webhook and absent from rejected ones (docs/decisions.md).
    """
    if status not in WITHDRAWAL_STATUSES:
        raise ValueError(f"unknown withdrawal webhook status {status!r}")
    body: dict[str, Any] = {
        "type": "withdrawal",
        "status": status,
        "asset": asset,
        "dchain": dchain,
        "amount": amount,  # a JSON number, written from the Decimal exactly
        "fee": number_text(fee),
        "to": to,
    }
    if status != "rejected":
        body["txHash"] = tx_hash
    body["uid"] = uid
    return _mark_sandbox(body, sandbox)


def deposit_body(
    *,
    amount: Decimal,
    asset: str,
    network: str,
    deposit_address: str,
    status: str,
    address_id: str,
    internal_user_id: str,
    tx_hash: str,
    email: str | None,
    fee_payer: str,
    sandbox: bool = False,
) -> dict[str, Any]:
    """docs/api.md: amount, asset, network, depositAddress, status, id, internal_user_id, hash, email,
    feePayer.

    `amount` is a string (the API documents it as a string; docs/decisions.md). `email` is omitted when the
    address has none.
    """
    if status not in DEPOSIT_STATUSES:
        raise ValueError(f"unknown deposit webhook status {status!r}")
    if fee_payer not in ("buyer", "merchant"):
        raise ValueError(f"unknown fee payer {fee_payer!r}")
    body: dict[str, Any] = {
        "amount": number_text(amount),
        "asset": asset,
        "network": network,
        "depositAddress": deposit_address,
        "status": status,
        "id": address_id,
        "internal_user_id": internal_user_id,
        "hash": tx_hash,
    }
    if email:
        body["email"] = email
    body["feePayer"] = fee_payer
    return _mark_sandbox(body, sandbox)
