"""Forms of the hosted pay page: the client's fill form and the sandbox simulator's block count."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from chains.simulator import MAX_BLOCKS_PER_CALL
from core.assets import get_asset


class ProceedForm(forms.Form):
    """E-mail and asset (the asset only when the merchant did not fix it); feeds `invoice_fill`."""

    email = forms.EmailField(
        label=_("Your e-mail"),
        max_length=254,
        help_text=_("For your receipt and in case the merchant needs to reach you about this payment."),
        widget=forms.EmailInput(attrs={"autocomplete": "email", "inputmode": "email", "spellcheck": "false"}),
    )
    asset = forms.ChoiceField(
        label=_("Pay with"),
        widget=forms.RadioSelect,
        error_messages={"required": _("Choose the currency you want to pay with.")},
    )

    def __init__(
        self, *args: Any, codes: list[str], fixed_code: str = "", receipt: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        if not receipt:  # a receipt is promised only when the merchant sends one (notifications)
            self.fields["email"].help_text = _("In case the merchant needs to reach you about this payment.")
        self.fixed_code = fixed_code
        if fixed_code:
            del self.fields["asset"]
        else:
            asset = self.fields["asset"]
            assert isinstance(asset, forms.ChoiceField)
            asset.choices = [(code, get_asset(code).label) for code in codes]

    def payment_code(self) -> str | None:
        return None if self.fixed_code else self.cleaned_data["asset"]


class MineForm(forms.Form):
    count = forms.IntegerField(min_value=1, max_value=MAX_BLOCKS_PER_CALL, required=False)
