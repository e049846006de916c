import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import DomainError
from payments.services import merchant_create


class Command(BaseCommand):
    help = "Create a merchant (dashboard user + company) and print its public token and signing secret once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="company name")
        parser.add_argument("--email", required=True, help="owner e-mail, the dashboard login")
        parser.add_argument("--password", help="dashboard password (omit: no login until a reset)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            created = merchant_create(
                name=options["name"], email=options["email"], password=options["password"]
            )
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        result = {
            "companyId": str(created.company.pk),
            "email": created.company.owner.email,
            "publicToken": created.public_token,
            "signingSecret": created.signing_secret,
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        for key, value in result.items():
            self.stdout.write(f"{key}: {value}")
        self.stdout.write("The public token is shown only now; store it safely.")
