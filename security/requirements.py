"""A company's own security rules, set by its owner: for now, two-factor authentication for every member.

When the company requires it, a member without an authenticator is sent to the enrolment page on every
dashboard page but enrolling, confirming it is them and leaving (security.middleware), until enrolled. The
API is not affected: its tokens are not a member's log-in.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from core.errors import FieldError, ValidationFailed
from payments.models import Company
from security.models import CompanySecurity
from security.totp import has_totp


def company_requires_2fa(*, company: Company) -> bool:
    return CompanySecurity.objects.filter(company=company, require_2fa=True).exists()


def member_must_enrol(user: Any) -> bool:
    """`user` belongs to a company that requires 2FA and has no authenticator (one query when it does not)."""
    if user is None or getattr(user, "pk", None) is None:
        return False
    required = CompanySecurity.objects.filter(company__members__user_id=user.pk, require_2fa=True)
    return required.exists() and not has_totp(user)


@transaction.atomic
def company_require_2fa_set(*, company: Company, required: bool, by: Any) -> bool:
    """Require (or stop requiring) 2FA of every member; True when it changed. The one who turns it on must
    have an authenticator already, so that the rule never starts by locking its author out of the page."""
    if required and not has_totp(by):
        raise ValidationFailed(
            [FieldError("require_2fa", "second_factor_required", "Turn on your own authenticator first.")]
        )
    row, _ = CompanySecurity.objects.select_for_update().get_or_create(company=company)
    if row.require_2fa == required:
        return False
    row.require_2fa = required
    row.save(update_fields=["require_2fa", "updated_at"])
    return True
