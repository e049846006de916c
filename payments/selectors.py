"""Reads on merchants and their balances (`<noun>_get_*`, `<noun>_list_*`)."""

from __future__ import annotations

from decimal import Decimal
from typing import TypedDict

from payments.assets import all_assets
from payments.models import Account, Company
from payments.services import token_hash


def company_get_by_token(token: str) -> Company | None:
    return Company.objects.filter(token_hash=token_hash(token)).select_related("owner").first()


class BalanceRow(TypedDict):
    code: str  # payment code
    base: str  # its base asset
    available: Decimal
    held: Decimal


def balance_list_for_company(*, company: Company) -> list[BalanceRow]:
    """One row per payment code in registry order; zeros where the company has no account yet. One query."""
    amounts = {
        code: (available, held)
        for code, available, held in Account.objects.filter(company=company).values_list(
            "code", "available", "held"
        )
    }
    zero = (Decimal(0), Decimal(0))
    rows: list[BalanceRow] = []
    for asset in all_assets():
        available, held = amounts.get(asset.code, zero)
        rows.append({"code": asset.code, "base": asset.base, "available": available, "held": held})
    return rows
