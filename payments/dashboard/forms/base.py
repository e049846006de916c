"""What the dashboard forms share. Field rules are the functions the API applies too (core.money,
invoices.rules, withdrawals.rules, the services), never restated here: a form renders inputs, calls those
rules and maps their field errors onto its inputs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django import forms

from core.assets import all_assets
from core.errors import FieldError
from core.offer import offered_codes
from payments.models import FeePayer

FEE_PAYER_CHOICES = [
    (FeePayer.BUYER.value, "Buyer pays the fee (the client sends total + fee)"),
    (FeePayer.MERCHANT.value, "Merchant pays the fee (deducted from what you receive)"),
]


def add_field_errors(form: forms.Form, errors: Iterable[FieldError], fields: Mapping[str, str]) -> None:
    """Attach API/service field errors to the form field they name; the rest go to the whole form."""
    for error in errors:
        name = fields.get(error.field, error.field)
        message = error.message
        if name not in form.fields and error.field:
            message = f"{error.field}: {message}"
        form.add_error(name if name in form.fields else None, message)


def set_choices(form: forms.Form, name: str, choices: list[tuple[str, str]]) -> None:
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    field.choices = choices


def code_choices(codes: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """The given codes, or every code this deployment offers (a code without a backend is not shown)."""
    chosen = set(codes) if codes is not None else set(offered_codes())
    return [(asset.code, f"{asset.code} — {asset.label}") for asset in all_assets() if asset.code in chosen]
