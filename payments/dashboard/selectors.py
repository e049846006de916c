"""Reads the dashboard needs beyond the apps' own selectors; every one is scoped by company."""

from __future__ import annotations

from django.db.models import QuerySet

from core.assets import get_asset
from payments.models import Company, Deposit, LedgerEntry, StaticDepositAddress


def ledger_entry_list_for_account(*, company: Company, code: str) -> QuerySet[LedgerEntry]:
    """The company's entries in one payment code, newest first (UnsupportedAsset for an unknown code)."""
    code = get_asset(code).code
    return LedgerEntry.objects.filter(account__company=company, account__code=code).order_by(
        "-created_at", "-pk"
    )


def static_address_list_for_company(*, company: Company) -> QuerySet[StaticDepositAddress]:
    return (
        StaticDepositAddress.objects.filter(company=company)
        .select_related("deposit_address")
        .order_by("-created_at", "-pk")
    )


def deposit_list_for_company(*, company: Company) -> QuerySet[Deposit]:
    """Transfers routed to the company's addresses (invoices and static), newest first."""
    return Deposit.objects.filter(company=company).order_by("-seen_at", "-pk")
