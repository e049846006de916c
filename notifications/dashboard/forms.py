from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from notifications.models import MEMBER_KINDS


class PreferenceForm(forms.Form):
    kinds = forms.MultipleChoiceField(
        label=_("E-mail me when"),
        choices=[(kind.value, kind.label) for kind in MEMBER_KINDS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    language = forms.ChoiceField(label=_("Language of my e-mail"), choices=settings.LANGUAGES)
    receipts = forms.BooleanField(
        label=_("E-mail a receipt to the client when an invoice is done"), required=False
    )
