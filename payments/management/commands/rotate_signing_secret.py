import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from payments.management.commands._merchant import add_company_arguments, find_company
from payments.services import company_rotate_signing_secret


class Command(BaseCommand):
    help = "Issue a new webhook signing secret for a company; webhooks sent from now on use it."

    def add_arguments(self, parser: CommandParser) -> None:
        add_company_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        company = find_company(company=options["company"], email=options["email"])
        secret = company_rotate_signing_secret(company_id=company.pk)
        if options["json"]:
            self.stdout.write(json.dumps({"companyId": str(company.pk), "signingSecret": secret}))
        else:
            self.stdout.write(f"signingSecret: {secret}")
