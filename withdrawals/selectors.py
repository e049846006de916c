"""Reads, always scoped by company (`withdrawal_get_*`, `withdrawal_list_*`)."""

from __future__ import annotations

from django.db.models import QuerySet

from core.assets import Asset, all_assets
from core.errors import NotFound
from payments.models import Company
from withdrawals.models import AutoWithdrawalRule, Withdrawal


def withdrawal_get_for_company(*, company: Company, uid: str) -> Withdrawal:
    withdrawal = Withdrawal.objects.filter(company=company, uid=uid).first()
    if withdrawal is None:
        raise NotFound("No such withdrawal.")  # also another merchant's: never reveal it exists
    return withdrawal


def withdrawal_list_for_company(
    *,
    company: Company,
    status: str | None = None,
    code: str | None = None,
    is_automatic: bool | None = None,
) -> QuerySet[Withdrawal]:
    withdrawals = Withdrawal.objects.filter(company=company)
    if status:
        withdrawals = withdrawals.filter(status=status)
    if code:
        withdrawals = withdrawals.filter(code=code)
    if is_automatic is not None:
        withdrawals = withdrawals.filter(is_automatic=is_automatic)
    return withdrawals.order_by("-created_at", "-pk")


def auto_withdrawal_list_for_company(*, company: Company) -> list[tuple[Asset, AutoWithdrawalRule | None]]:
    """One entry per payment code in registry order, with its rule or None when unconfigured."""
    rules = {rule.code: rule for rule in AutoWithdrawalRule.objects.filter(company=company)}
    return [(asset, rules.get(asset.code)) for asset in all_assets()]
