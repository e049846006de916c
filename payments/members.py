"""A company's members: added with a role, moved to another role, removed. Each change in one transaction;
at least one owner always remains, so a company can never lock itself out."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from core.errors import FieldError, ValidationFailed
from payments.models import Company, Membership
from payments.roles import OWNER, ROLES


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValidationFailed([FieldError("role", "invalid", f"A role is one of {', '.join(ROLES)}.")])


@transaction.atomic
def member_add(*, company: Company, user: Any, role: str, invited_by: Any = None) -> Membership:
    """`user` joins `company` as `role`; a user is a member of one company at most."""
    _check_role(role)
    if Membership.objects.filter(user=user).exists():
        raise ValidationFailed(
            [FieldError("email", "already_member", f"{user.email} is already a member of a company.")]
        )
    return Membership.objects.create(company=company, user=user, role=role, invited_by=invited_by)


def owners_left(company: Company, *, without: Membership) -> int:
    """How many owners `company` keeps if `without` stops being one (call under the members' lock)."""
    return Membership.objects.filter(company=company, role=OWNER).exclude(pk=without.pk).count()
