import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core.errors import DomainError
from payments.management.company_option import add_company_arguments, find_company
from payments.tokens import SCOPES, api_token_create, api_token_describe
from security.audit import audit_record


class Command(BaseCommand):
    help = (
        "Issue a named API token with the given scopes (and, optionally, only from the given networks); "
        "the token is printed once. Scopes: " + ", ".join(SCOPES) + "."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_company_arguments(parser)
        parser.add_argument("--name", required=True, help="what the token is for, unique among live tokens")
        parser.add_argument(
            "--scope", action="append", default=[], metavar="SCOPE", help="a scope; repeat for more"
        )
        parser.add_argument(
            "--allow-ip",
            action="append",
            default=[],
            metavar="CIDR",
            help="an IPv4/IPv6 address or network the token may be used from; repeat for more (none: any)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        company = find_company(company=options["company"], email=options["email"])
        try:
            with transaction.atomic():
                issued = api_token_create(
                    company_id=company.pk,
                    name=options["name"],
                    scopes=options["scope"],
                    allowed_networks=options["allow_ip"],
                )
                audit_record(
                    None, company=company, action="token.create", detail=api_token_describe(issued.token)
                )
        except DomainError as exc:
            raise CommandError("; ".join(error.message for error in exc.errors) or exc.detail) from exc
        token = issued.token
        result = {
            "token": issued.secret,
            "id": token.pk,
            "name": token.name,
            "prefix": token.token_prefix,
            "scopes": token.scopes,
            "allowedNetworks": token.allowed_networks,
            "companyId": str(company.pk),
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        for key, value in result.items():
            self.stdout.write(f"{key}: {', '.join(value) if isinstance(value, list) else value}")
        self.stdout.write("The token is shown only now; store it safely.")
