"""The body of a static deposit address's webhook (docs/api.md); `webhooks` stores, signs and delivers it.

Its `status` is the webhook's own word for where the deposit stands, not the stored deposit's state:
processing (seen, not final), done (credited), failed or frozen.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from core.money import number_text
from core.wire import mark_sandbox

DEPOSIT_STATUSES = ("processing", "done", "failed", "frozen")


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
    return mark_sandbox(body, sandbox)
