"""`make run`: make sure a demo merchant exists and print working credentials and URLs.

The public token is stored only as a hash, so the demo's token is also kept in var/demo-merchant.json
(development only) to be printed again on the next start. If that file is gone, the token is rotated.
"""

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from payments.models import Company
from payments.services import company_rotate_token, company_signing_secret, merchant_create, token_hash

DEMO_EMAIL = "demo@kassa.local"
DEMO_PASSWORD = "kassa-demo-password"  # noqa: S105 - development demo login, printed on purpose


class Command(BaseCommand):
    help = "Create the demo merchant if none exists and print its credentials (development only)."

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
        if company is None:
            created = merchant_create(name="Demo Shop", email=DEMO_EMAIL, password=DEMO_PASSWORD)
            company, token = created.company, created.public_token
        else:
            token = _stored_token(path, company) or company_rotate_token(company_id=company.pk)
        _store(path, {"companyId": str(company.pk), "publicToken": token})

        base, pay = settings.BASE_URL, settings.PAY_URL
        lines = [
            "",
            "Kassa is starting. Demo merchant:",
            f"  company id      {company.pk}",
            f"  public token    {token}",
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
            f"       -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' \\",
            '       -d \'{"webHookUrl": "http://127.0.0.1:9000/hook"}\'',
            "",
        ]
        self.stdout.write("\n".join(lines))


def _stored_token(path: Path, company: Company) -> str | None:
    try:
        stored = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    token = stored.get("publicToken", "")
    return token if token and token_hash(token) == company.token_hash else None


def _store(path: Path, data: dict[str, str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle)
