import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from payments.management.commands._merchant import add_company_arguments, find_company
from payments.services import company_rotate_signing_secret


class Command(BaseCommand):
    help = (
        "Issue a new webhook signing secret for a company. Webhooks sent from now on are signed with it and, "
        "for the overlap, with the previous one as well."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_company_arguments(parser)
        parser.add_argument(
            "--overlap-hours",
            type=int,
            default=None,
            help="how long the previous secret keeps signing beside the new one (default: the "
            "WEBHOOK_SECRET_OVERLAP_HOURS setting, 24); 0 stops it at once (a leaked secret)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        company = find_company(company=options["company"], email=options["email"])
        hours = options["overlap_hours"]
        if hours is not None and not 0 <= hours <= 24 * 30:
            raise CommandError("--overlap-hours must be 0 to 720")
        overlap = None if hours is None else timedelta(hours=hours)
        secret = company_rotate_signing_secret(company_id=company.pk, overlap=overlap)
        if options["json"]:
            self.stdout.write(json.dumps({"companyId": str(company.pk), "signingSecret": secret}))
        else:
            self.stdout.write(f"signingSecret: {secret}")
