"""Balances and the ledger of each payment code."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from core.assets import get_asset
from core.errors import UnsupportedAsset
from core.offer import is_offered
from payments.dashboard.selectors import ledger_entry_list_for_account
from payments.dashboard.views.common import merchant_view, paginate
from payments.models import Company, LedgerEntry
from payments.selectors import balance_list_for_company

LEDGER_PAGE_SIZE = 50
KIND_LABELS = {
    LedgerEntry.Kind.DEPOSIT_CREDIT: "Deposit",
    LedgerEntry.Kind.INVOICE_CREDIT: "Invoice payment",
    LedgerEntry.Kind.WITHDRAWAL_HOLD: "Withdrawal held",
    LedgerEntry.Kind.WITHDRAWAL_RELEASE: "Withdrawal released",
    LedgerEntry.Kind.WITHDRAWAL_POST: "Withdrawal sent",
    LedgerEntry.Kind.ADJUSTMENT: "Adjustment",
}


def reference_link(reference: str) -> str | None:
    """The dashboard page of what caused a ledger entry ("invoice:<id>", "withdrawal:<uid>"), if any."""
    kind, _, key = reference.partition(":")
    names = {"invoice": "dashboard:invoice_detail", "withdrawal": "dashboard:withdrawal_detail"}
    if kind not in names or not key:
        return None
    try:
        return reverse(names[kind], args=[key])
    except NoReverseMatch:  # not an id this site routes (or withdrawals pages not installed)
        return None


@merchant_view
def balances(request: HttpRequest, company: Company) -> HttpResponse:
    # Offered codes, and any other that still holds money (a code whose backend was switched off).
    rows = [
        {**row, "asset": get_asset(row["code"])}
        for row in balance_list_for_company(company=company)
        if is_offered(row["code"]) or row["available"] or row["held"]
    ]
    return render(request, "payments/balances.html", {"company": company, "nav": "balances", "rows": rows})


@merchant_view
def ledger(request: HttpRequest, company: Company, code: str) -> HttpResponse:
    try:
        asset = get_asset(code)
        entries = ledger_entry_list_for_account(company=company, code=code)
    except UnsupportedAsset as exc:
        raise Http404("No such asset.") from exc
    if asset.code != code:
        raise Http404("Payment codes are lowercase.")
    page = paginate(request, entries, LEDGER_PAGE_SIZE)
    rows = [
        {
            "entry": entry,
            "kind": KIND_LABELS.get(entry.kind, entry.kind),
            "link": reference_link(entry.reference),
        }
        for entry in page
    ]
    balance = next(row for row in balance_list_for_company(company=company) if row["code"] == asset.code)
    context = {
        "company": company,
        "nav": "balances",
        "asset": asset,
        "balance": balance,
        "page": page,
        "rows": rows,
    }
    return render(request, "payments/ledger.html", context)
