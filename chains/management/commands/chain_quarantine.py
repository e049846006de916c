from typing import Any

from django.core.management.base import BaseCommand, CommandError

from payments.models import QuarantinedTransfer


class Command(BaseCommand):
    help = (
        "List transfers whose ingestion failed and that are set aside (retried with a growing pause); "
        "exit status 1 when there are any."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        rows = QuarantinedTransfer.objects.order_by("first_failed_at")
        for row in rows:
            self.stdout.write(
                f"{row.code} {row.txid}:{row.output_index} attempts={row.attempts} "
                f"first={row.first_failed_at:%Y-%m-%dT%H:%M:%SZ} next={row.retry_at:%Y-%m-%dT%H:%M:%SZ} "
                f"error={row.error}"
            )
        count = rows.count()
        if count:
            raise CommandError(f"{count} transfer(s) in quarantine")
        self.stdout.write("no transfer in quarantine")
