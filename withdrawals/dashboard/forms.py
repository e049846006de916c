"""Withdrawal forms: one withdrawal, a bulk file, list filters and the auto-withdrawal rules.

Shapes are checked by the withdrawals API's serializers, rules (address per network, tags, minimums,
decimals, balance) by withdrawals' own services; these forms only carry the values and show the errors.
"""

from __future__ import annotations

from typing import Any

from django import forms

from core.assets import all_assets
from core.errors import FieldError
from core.money import InvalidAmount, amount_input, number_text
from payments.dashboard.forms.base import add_field_errors, code_choices
from withdrawals.auto_withdrawals import RuleInput
from withdrawals.dashboard.confirming import secret_field
from withdrawals.models import AutoWithdrawalRule, Withdrawal
from withdrawals.rules import WithdrawalItem

BULK_MAX_BYTES = 512 * 1024  # the preview posts the text back: it must stay under the 1 MiB body cap


def item_field_errors(errors: list[FieldError], prefix: str) -> list[FieldError]:
    """`items[0].to` -> `to`: a service's error on one item, named as the form names it."""
    return [
        FieldError(error.field.removeprefix(prefix).lstrip("."), error.code, error.message)
        if error.field.startswith(prefix)
        else error
        for error in errors
    ]


class WithdrawalFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *Withdrawal.Status.choices])
    asset = forms.ChoiceField(required=False)
    kind = forms.ChoiceField(
        required=False,
        choices=[("", "Manual and automatic"), ("manual", "Manual"), ("automatic", "Automatic")],
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["asset"]
        assert isinstance(field, forms.ChoiceField)
        # Past withdrawals may be on any code, offered now or not.
        field.choices = [("", "Every asset"), *code_choices(asset.code for asset in all_assets())]

    def selector_filters(self) -> dict[str, Any]:
        data = self.cleaned_data if self.is_valid() else {}
        kind = data.get("kind")
        return {
            "status": data.get("status") or None,
            "code": data.get("asset") or None,
            "is_automatic": None if not kind else kind == "automatic",
        }


class WithdrawalForm(forms.Form):
    asset = forms.ChoiceField(label="Asset")
    to = forms.CharField(label="To address", max_length=128, widget=forms.TextInput(attrs={"class": "mono"}))
    amount = forms.CharField(
        label="Amount",
        strip=False,  # checked as written, like the API's amounts
        help_text="Net: what the receiver gets. The network fee is charged on top.",
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    tag = forms.CharField(
        label="Tag / memo", required=False, max_length=64, help_text="Required for TON; empty for the rest."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["asset"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = code_choices()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            amount = amount_input(data["amount"])
        except InvalidAmount as exc:
            self.add_error("amount", str(exc))
            return data
        # The address, tag, minimum and decimals are withdrawals.rules' checks, run by withdrawal_request.
        data["item"] = WithdrawalItem(
            asset=data["asset"], to=data["to"], amount=amount, tag=data.get("tag") or ""
        )
        return data


class BulkUploadForm(forms.Form):
    file = forms.FileField(label="CSV file", required=False)
    text = forms.CharField(
        label="Or paste the lines",
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 6, "class": "mono", "placeholder": "asset,to,amount,tag\nbtc,bc1q...,0.01,"}
        ),
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("file")
        if upload is not None:
            if upload.size > BULK_MAX_BYTES:
                self.add_error("file", "The file is larger than 512 KiB; split it.")
                return data
            try:
                data["csv"] = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                self.add_error("file", "The file is not UTF-8 text. Save it as CSV (UTF-8) and try again.")
                return data
        elif (data.get("text") or "").strip():
            data["csv"] = data["text"]
        else:
            self.add_error(None, "Choose a CSV file or paste its lines.")
        return data


class AutoWithdrawalRulesForm(forms.Form):
    """One row per payment code (enabled, threshold, address, tag), checked as the auto-withdrawals PATCH."""

    secret = secret_field()

    def __init__(self, *args: Any, rules: list[tuple[Any, AutoWithdrawalRule | None]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.assets = [asset for asset, _ in rules]
        self.current = {asset.code: rule for asset, rule in rules}
        for asset, rule in rules:
            code = asset.code
            self.fields[f"enabled_{code}"] = forms.BooleanField(
                label=f"Enable {code}", required=False, initial=bool(rule and rule.is_enabled)
            )
            self.fields[f"amount_{code}"] = forms.CharField(
                label=f"{code} threshold",
                required=False,
                strip=False,
                initial=number_text(rule.amount) if rule else "0",
                widget=forms.TextInput(attrs={"inputmode": "decimal", "class": "num"}),
            )
            self.fields[f"address_{code}"] = forms.CharField(
                label=f"{code} address",
                required=False,
                max_length=128,
                initial=rule.address if rule else "",
                widget=forms.TextInput(attrs={"class": "mono", "placeholder": "Destination address"}),
            )
            self.fields[f"tag_{code}"] = forms.CharField(
                label=f"{code} tag",
                required=False,
                max_length=64,
                initial=rule.tag if rule else "",
                widget=forms.TextInput(attrs={"placeholder": "Tag" if asset.tag_required else "—"}),
            )

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "asset": asset,
                "enabled": self[f"enabled_{asset.code}"],
                "amount": self[f"amount_{asset.code}"],
                "address": self[f"address_{asset.code}"],
                "tag": self[f"tag_{asset.code}"],
            }
            for asset in self.assets
        ]

    def _unchanged(self, code: str, rule: RuleInput) -> bool:
        current = self.current.get(code)
        if current is None:
            return not rule.is_enabled and rule.amount == 0 and not rule.address and not rule.tag
        return (
            current.is_enabled == rule.is_enabled
            and current.amount == rule.amount
            and current.address == rule.address
            and current.tag == (rule.tag or "")
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        rules: dict[str, RuleInput] = {}
        for asset in self.assets:
            code = asset.code
            try:
                amount = amount_input(data.get(f"amount_{code}") or "0", allow_zero=True)
            except InvalidAmount as exc:
                self.add_error(f"amount_{code}", str(exc))
                continue
            # The address, tag and minimum are auto_withdrawal_rules_set's checks (withdrawals.rules).
            rule = RuleInput(
                amount=amount,
                is_enabled=bool(data.get(f"enabled_{code}")),
                address=(data.get(f"address_{code}") or "").strip(),
                tag=(data.get(f"tag_{code}") or "").strip() or None,
            )
            if not self._unchanged(code, rule):
                rules[code] = rule
        data["rules"] = rules
        return data

    def apply_errors(self, errors: list[FieldError]) -> None:
        """The service's `assets.<code>.<field>` errors onto this form's row fields."""
        names = {
            "amount": "amount",
            "withdrawalAddress": "address",
            "withdrawalTag": "tag",
            "isEnabled": "enabled",
        }
        mapped: list[FieldError] = []
        for error in errors:
            _, code, field = [*error.field.split(".", 2), "", ""][:3]
            name = f"{names.get(field, field)}_{code}"
            mapped.append(FieldError(name if name in self.fields else error.field, error.code, error.message))
        add_field_errors(self, mapped, {})


class ApproveForm(forms.Form):
    code = forms.CharField(
        label="Authenticator code",
        max_length=16,
        widget=forms.TextInput(
            attrs={"inputmode": "numeric", "autocomplete": "one-time-code", "class": "mono", "size": "8"}
        ),
    )
