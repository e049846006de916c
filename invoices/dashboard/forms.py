"""Invoice list filters, the create form with its item rows, the refund form, payment settings and
underpayment limits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django import forms

from core.assets import BASE_ASSETS, INVOICE_CURRENCIES, get_asset
from core.errors import FieldError, ValidationFailed
from core.offer import offered_codes
from invoices.models import Invoice
from invoices.rules import (
    ITEM_NAME_MAX_LENGTH,
    allowed_codes,
    invoice_currency_check,
    item_price_check,
    underpayment_limits_check,
)
from payments.dashboard.forms.base import (
    FEE_PAYER_CHOICES,
    add_field_errors,
    code_choices,
    set_choices,
)
from payments.models import Company, FeePayer
from payments.services import redirect_url_check

MAX_INVOICE_ROWS = 200
BLANK_INVOICE_ROWS = 3  # rows shown without JavaScript; the script adds more on demand


class InvoiceFilterForm(forms.Form):
    status = forms.ChoiceField(
        required=False, choices=[("", "All statuses"), *Invoice.Status.choices], label="Status"
    )
    q = forms.CharField(required=False, max_length=254, label="Search")


class InvoiceCreateForm(forms.Form):
    """The invoice's fields; its item rows come as parallel `item_name` / `item_price` lists."""

    invoice_currency = forms.ChoiceField(
        label="Currency", choices=[(code, code.upper()) for code in INVOICE_CURRENCIES], initial="usd"
    )
    fee_payer = forms.ChoiceField(label="Service fee", choices=FEE_PAYER_CHOICES, widget=forms.RadioSelect)
    payment_currency = forms.ChoiceField(
        label="Payment currency", required=False, help_text="Empty: the client chooses on the pay page."
    )
    redirect_url = forms.CharField(
        label="Redirect URL",
        required=False,
        help_text="After payment. Empty: your default from the payment settings.",
        widget=forms.URLInput(attrs={"placeholder": "https://shop.example/orders/1042"}),
    )

    def __init__(self, *args: Any, company: Company, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        set_choices(
            self,
            "payment_currency",
            [
                ("", "Client chooses"),
                *code_choices(allowed_codes(company)),
            ],
        )
        self.fields["fee_payer"].initial = company.default_fee_payer
        self.rows: list[dict[str, Any]] = [
            {"name": "", "price": "", "errors": []} for _ in range(BLANK_INVOICE_ROWS)
        ]
        self.items: list[dict[str, str]] = []

    def read_rows(self, data: Any) -> None:
        names = data.getlist("item_name")[:MAX_INVOICE_ROWS]
        prices = data.getlist("item_price")[:MAX_INVOICE_ROWS]
        count = max(len(names), len(prices))
        names += [""] * (count - len(names))
        prices += [""] * (count - len(prices))
        self.rows = [
            {"name": name, "price": price, "errors": []}
            for name, price in zip(names, prices, strict=True)
            if name.strip() or price.strip()
        ]
        while len(self.rows) < BLANK_INVOICE_ROWS:
            self.rows.append({"name": "", "price": "", "errors": []})

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        filled = [row for row in self.rows if row["name"].strip() or row["price"]]
        if not filled:
            self.add_error(None, "Add at least one item with a price.")
            return data
        for row in filled:
            if not row["price"]:
                row["errors"].append("Enter a price.")
        if any(row["errors"] for row in filled):
            self.add_error(None, "Some item rows need attention.")
            return data
        # The rules the API applies to each value (invoices.rules, payments.services); the rest
        # (accepted payment code, total > 0) are invoice_create's, mapped back by apply_errors.
        errors: list[FieldError] = []
        items: list[dict[str, Any]] = []
        for index, row in enumerate(filled):
            field = f"items[{index}]"
            if len(row["name"]) > ITEM_NAME_MAX_LENGTH:
                message = f"Ensure this field has no more than {ITEM_NAME_MAX_LENGTH} characters."
                errors.append(FieldError(f"{field}.name", "max_length", message))
            try:
                items.append(
                    {"name": row["name"], "price": item_price_check(row["price"], field=f"{field}.price")}
                )
            except ValidationFailed as exc:
                errors += exc.errors
        values: dict[str, Any] = {
            "items": items,
            "isMerchantPaysFee": data.get("fee_payer") == FeePayer.MERCHANT,
            "paymentCurrency": data.get("payment_currency") or None,
        }
        for key, check, raw in (
            ("invoiceCurrency", invoice_currency_check, data.get("invoice_currency", "")),
            ("redirectURL", redirect_url_check, data.get("redirect_url") or ""),
        ):
            try:
                values[key] = check(raw, field=key) or None
            except ValidationFailed as exc:
                errors += exc.errors
        if errors:
            self.apply_errors(errors)
            return data
        data["validated"] = values
        return data

    def apply_errors(self, errors: Iterable[FieldError]) -> None:
        """API field names (`items[2].price`, `redirectURL`) onto rows and fields."""
        errors = list(errors)
        filled = [row for row in self.rows if row["name"].strip() or row["price"]]
        fields = {
            "invoiceCurrency": "invoice_currency",
            "paymentCurrency": "payment_currency",
            "redirectURL": "redirect_url",
            "isMerchantPaysFee": "fee_payer",
        }
        rest: list[FieldError] = []
        for error in errors:
            if error.field.startswith("items[") and "]" in error.field:
                index_text, _, name = error.field[len("items[") :].partition("]")
                if index_text.isdigit() and int(index_text) < len(filled):
                    label = name.lstrip(".") or "item"
                    filled[int(index_text)]["errors"].append(f"{label}: {error.message}")
                    continue
            rest.append(error)
        if len(rest) != len(errors) and not self.non_field_errors():
            self.add_error(None, "Some item rows need attention.")
        add_field_errors(self, rest, fields)


class RefundForm(forms.Form):
    address = forms.CharField(
        label="Client's address", max_length=128, widget=forms.TextInput(attrs={"class": "mono"})
    )
    tag = forms.CharField(
        label="Tag / memo", max_length=64, required=False, help_text="Only for assets that use tags (TON)."
    )


def offered_bases() -> set[str]:
    return {get_asset(code).base for code in offered_codes()}


class PaymentSettingsForm(forms.Form):
    redirect_url = forms.CharField(
        label="Default redirect URL",
        required=False,
        help_text="Where the client goes after a paid invoice, unless the invoice names its own.",
        widget=forms.URLInput(attrs={"placeholder": "https://shop.example/thank-you"}),
    )
    allowed_assets = forms.MultipleChoiceField(
        label="Assets clients may pay with",
        choices=[(base, base.upper()) for base in BASE_ASSETS],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Allow at least one asset."},
    )
    default_fee_payer = forms.ChoiceField(
        label="Who pays the service fee by default", choices=FEE_PAYER_CHOICES, widget=forms.RadioSelect
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only assets this deployment offers on some network; the others stay as they were (the view).
        offered = offered_bases()
        set_choices(self, "allowed_assets", [(base, base.upper()) for base in BASE_ASSETS if base in offered])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            data["redirect_url"] = redirect_url_check(data.get("redirect_url", ""), field="redirect_url")
        except ValidationFailed as exc:
            add_field_errors(self, exc.errors, {})
        return data


class UnderpaymentLimitsForm(forms.Form):
    """One static + percentage pair per payment code, validated as PATCH /api/company/underpayment-limits."""

    def __init__(
        self, *args: Any, initial_limits: Mapping[str, tuple[str, str]] | None = None, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        self.codes = offered_codes()
        initial_limits = initial_limits or {}
        for code in self.codes:
            static, percentage = initial_limits.get(code, ("0", "0"))
            # strip=False: the amount is checked as written, like the API's (no spaces, ASCII digits).
            self.fields[f"static_{code}"] = forms.CharField(
                label=f"{code} static", initial=static, required=False, strip=False,
                widget=forms.TextInput(attrs={"inputmode": "decimal", "class": "num"}),
            )  # fmt: skip
            self.fields[f"percentage_{code}"] = forms.CharField(
                label=f"{code} percentage", initial=percentage, required=False, strip=False,
                widget=forms.TextInput(attrs={"inputmode": "decimal", "class": "num"}),
            )  # fmt: skip

    def rows(self) -> list[tuple[str, str, forms.BoundField, forms.BoundField]]:
        return [
            (code, get_asset(code).label, self[f"static_{code}"], self[f"percentage_{code}"])
            for code in self.codes
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        raw = {
            code: {
                "static": data.get(f"static_{code}") or "0",
                "percentage": data.get(f"percentage_{code}") or "0",
            }
            for code in self.codes
        }
        try:
            data["limits"] = underpayment_limits_check(raw)
        except ValidationFailed as exc:
            fields = {
                f"assets.{code}.{name}": f"{name}_{code}"
                for code in self.codes
                for name in ("static", "percentage")
            }
            add_field_errors(self, exc.errors, fields)
        return data
