import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from payments.management.company_option import add_company_arguments, find_company
from security.audit import token_rotate_audited


class Command(BaseCommand):
    help = "Issue a new public token for a company; the old token stops working at once (audited)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_company_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        company = find_company(company=options["company"], email=options["email"])
        token = token_rotate_audited(None, company=company, how="by manage.py rotate_token")
        if options["json"]:
            self.stdout.write(json.dumps({"companyId": str(company.pk), "publicToken": token}))
        else:
            self.stdout.write(f"publicToken: {token}\nThe public token is shown only now; store it safely.")
