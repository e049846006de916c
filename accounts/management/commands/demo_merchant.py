"""`make run`: make sure a demo merchant exists and print its credentials and the URLs.

Running it again changes nothing. The public token is stored only as a hash, so the demo's token is also
kept in var/demo-merchant.json (development only) to be printed again. When that file no longer holds the
current token (rotated on the dashboard, or the file is gone), the command says so and leaves the token
alone: only `--rotate-token` issues a new one, recorded in the company's audit log.
"""

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from payments.models import Company
from payments.services import company_signing_secret, merchant_create, token_hash
from security.audit import token_rotate_audited

DEMO_EMAIL = "demo@kassa.local"
DEMO_PASSWORD = "kassa-demo-password"  # noqa: S105 - development demo login, printed on purpose
UNKNOWN = "unknown"  # printed instead of a token this command does not know (awk '{print $3}' gets it)


class Command(BaseCommand):
    help = (
        "Create the demo merchant if none exists and print its credentials (development only). "
        "Running it again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--rotate-token",
            action="store_true",
            help="issue a new public token (the current one stops working; recorded in the audit log)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEMO_MERCHANT_ALLOWED:
            # Its password is printed here and in README.md: such a login must never reach a deployment.
            raise CommandError(
                f"demo_merchant is for development only and refuses to run under {settings.SETTINGS_MODULE} "
                "(its dashboard password is public). Use `manage.py create_merchant` for a real merchant; "
                "for development run `make run` or set DJANGO_SETTINGS_MODULE=config.settings.dev."
            )
        path = Path(settings.VAR_DIR) / "demo-merchant.json"
        company = Company.objects.filter(owner__email=DEMO_EMAIL).first()
        token: str | None
        if company is None:
            created = merchant_create(name="Demo Shop", email=DEMO_EMAIL, password=DEMO_PASSWORD)
            company, token = created.company, created.public_token
            _store(path, company, token)
        elif options["rotate_token"]:
            how = "by manage.py demo_merchant --rotate-token"
            token = token_rotate_audited(None, company=company, how=how)
            _store(path, company, token)
        else:
            token = _stored_token(path, company)
        self.stdout.write(_banner(company, token))
        if token is None:
            self.stderr.write(
                f"The demo merchant's public token (it begins {company.token_prefix}) is not in {path}: "
                "it was rotated on the dashboard, or the file is gone, and only its hash is stored. Use "
                "the token you were shown then, or issue a new one (the current one stops working; "
                "recorded in the audit log):\n"
                "  DJANGO_SETTINGS_MODULE=config.settings.dev .venv/bin/python manage.py demo_merchant "
                "--rotate-token"
            )


def _banner(company: Company, token: str | None) -> str:
    base, pay = settings.BASE_URL, settings.PAY_URL
    shown = token or UNKNOWN
    return "\n".join(
        [
            "",
            "Kassa is starting. Demo merchant:",
            f"  company id      {company.pk}",
            f"  public token    {shown}",
            f"  signing secret  {company_signing_secret(company)}",
            f"  dashboard login {DEMO_EMAIL} / {DEMO_PASSWORD}",
            "URLs:",
            f"  API             {base}/api/",
            f"  API docs        {base}/api/docs/",
            f"  dashboard       {base}/dashboard/",
            f"  health          {base}/healthz",
            f"  admin           {base}/admin/",
            f"  pay pages       {pay}/<invoice_id>",
            "Try it:",
            f"  curl -X PUT {base}/api/company/settings/webhook-url \\",
            f"       -H 'Authorization: Bearer {token or '$TOKEN'}' -H 'Content-Type: application/json' \\",
            '       -d \'{"webHookUrl": "http://127.0.0.1:9000/hook"}\'',
            "",
        ]
    )


def _stored_token(path: Path, company: Company) -> str | None:
    """The token var/demo-merchant.json keeps, if it is still the company's."""
    try:
        stored = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    token = stored.get("publicToken", "") if isinstance(stored, dict) else ""
    return token if isinstance(token, str) and token and token_hash(token) == company.token_hash else None


def _store(path: Path, company: Company, token: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"companyId": str(company.pk), "publicToken": token}, handle)
