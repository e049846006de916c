"""A merchant's underpayment limits: how short a payment may fall and still complete its invoice."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from django.db import transaction

from invoices.models import UnderpaymentLimit
from payments.models import Company


@transaction.atomic
def underpayment_limits_set(*, company: Company, limits: Mapping[str, Mapping[str, Decimal]]) -> None:
    """Payment code -> {"static", "percentage"}, each pair checked by `rules.underpayment_limits_check`."""
    for code, values in limits.items():
        UnderpaymentLimit.objects.update_or_create(
            company=company,
            code=code,
            defaults={"static": values["static"], "percentage": values["percentage"]},
        )
