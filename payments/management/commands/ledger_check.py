from typing import Any

from django.core.management.base import BaseCommand, CommandError

from payments.ledger import ledger_verify
from payments.models import Account


class Command(BaseCommand):
    help = "Check that every account equals the sum of its ledger entries; exit status 1 on any mismatch."

    def handle(self, *args: Any, **options: Any) -> None:
        problems = ledger_verify()
        if problems:
            for line in problems:
                self.stdout.write(line)
            raise CommandError(f"ledger mismatch: {len(problems)} account(s) differ from their entries")
        self.stdout.write(f"ledger OK: {Account.objects.count()} accounts checked")
