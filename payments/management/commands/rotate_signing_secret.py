import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.wire import iso_utc
from payments.management.company_option import add_company_arguments, find_company
from payments.services import company_rotate_signing_secret


class Command(BaseCommand):
    help = (
        "Issue a new webhook signing secret for a company. Until the overlap ends, webhooks keep the "
        "previous secret's `signature` and carry the new one's in `signature-next` (both sign "
        "`webhook-signature`); from then on `signature` is the new secret's. Prints the secret and when "
        "the overlap ends."
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
        company.refresh_from_db(fields=["previous_signing_secret_until"])
        until = company.previous_signing_secret_until
        # When `signature` switches to the new secret: the moment a receiver checking it alone switches too.
        ends = iso_utc(until) if until is not None else None
        if options["json"]:
            self.stdout.write(
                json.dumps({"companyId": str(company.pk), "signingSecret": secret, "overlapEndsAt": ends})
            )
        else:
            self.stdout.write(f"signingSecret: {secret}")
            self.stdout.write(f"overlapEndsAt: {ends or 'now (no overlap)'}")
