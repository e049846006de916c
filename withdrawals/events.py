"""The body of a withdrawal's webhook (docs/api.md), built from the withdrawal's own status enum; `webhooks`
stores, signs and delivers it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from core.money import number_text
from core.wire import mark_sandbox
from withdrawals.models import WithdrawalStatus

WITHDRAWAL_STATUSES: tuple[str, ...] = tuple(WithdrawalStatus.values)


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
    return mark_sandbox(body, sandbox)
