import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from payments.management.company_option import add_company_arguments, find_company
from payments.selectors import api_token_get_for_company
from payments.tokens import api_token_describe, api_token_revoke
from security.audit import audit_record


class Command(BaseCommand):
    help = "Revoke a company's named API token (by its name among live tokens, or by its id); at once."

    def add_arguments(self, parser: CommandParser) -> None:
        add_company_arguments(parser)
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--name", help="the live token's name")
        which.add_argument("--id", type=int, help="the token's id (create_token --json prints it)")

    def handle(self, *args: Any, **options: Any) -> None:
        company = find_company(company=options["company"], email=options["email"])
        found = api_token_get_for_company(company=company, name=options["name"], token_id=options["id"])
        if found is None:
            raise CommandError(f"{company.name} has no live token {options['name'] or options['id']!r}.")
        with transaction.atomic():
            token, revoked = api_token_revoke(company_id=company.pk, token_id=found.pk)
            if revoked:
                audit_record(None, company=company, action="token.revoke", detail=api_token_describe(token))
        result = {"id": token.pk, "name": token.name, "revoked": revoked}
        if options["json"]:
            self.stdout.write(json.dumps(result))
        elif revoked:
            self.stdout.write(f"Revoked {token.name} ({token.token_prefix}…).")
        else:
            self.stdout.write(f"{token.name} ({token.token_prefix}…) was already revoked.")
