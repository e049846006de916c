"""Shared bits of the merchant commands: finding a company by id, number or owner e-mail."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser

from payments.models import Company


def add_company_arguments(parser: CommandParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--company", help="company id (UUID) or number")
    group.add_argument("--email", help="the owner's e-mail")
    parser.add_argument("--json", action="store_true", help="print JSON")


def find_company(*, company: str | None, email: str | None) -> Company:
    queryset = Company.objects.select_related("owner")
    try:
        if email:
            return queryset.get(owner__email__iexact=email.strip())
        assert company is not None
        if company.isdigit():
            return queryset.get(number=int(company))
        return queryset.get(pk=company)
    except (Company.DoesNotExist, ValueError, ValidationError) as exc:
        raise CommandError(f"No company matches {email or company!r}.") from exc
