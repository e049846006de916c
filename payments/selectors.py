"""Reads on merchants (`<noun>_get_*`, STYLE.md)."""

from __future__ import annotations

from payments.models import Company
from payments.services import token_hash


def company_get_by_token(token: str) -> Company | None:
    return Company.objects.filter(token_hash=token_hash(token)).select_related("owner").first()
