import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from payments.management.company_option import add_company_arguments, find_company
from security.audit import audit_record
from security.totp import totp_disable


class Command(BaseCommand):
    help = (
        "Turn off two-factor authentication of a company's owner (a lost phone and lost recovery codes): "
        "removes the authenticator and the recovery codes; the password alone logs in again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_company_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        company = find_company(company=options["company"], email=options["email"])
        with transaction.atomic():
            removed = totp_disable(user=company.owner)
            if removed:
                audit_record(None, company=company, action="2fa.disable", detail="by an operator")
        if options["json"]:
            self.stdout.write(json.dumps({"companyId": str(company.pk), "disabled": removed}))
        else:
            self.stdout.write("Two-factor authentication is off." if removed else "It was not on.")
