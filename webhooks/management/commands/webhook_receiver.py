import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from webhooks.receiver import Received, Reply, WebhookReceiver


class Command(BaseCommand):
    help = "Run a local webhook receiver that verifies signatures and prints each webhook (development)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=9000)
        parser.add_argument("--secret", help="the merchant's signing secret; without it nothing is verified")
        parser.add_argument("--status", type=int, default=200, help="HTTP status to answer with")

    def handle(self, *args: Any, **options: Any) -> None:
        def show(got: Received) -> None:
            verdict = {True: "signature OK", False: "SIGNATURE MISMATCH", None: "not verified (no --secret)"}
            try:
                pretty = json.dumps(json.loads(got.body), ensure_ascii=False)
            except ValueError:
                pretty = got.body.decode(errors="replace")
            self.stdout.write(f"{got.headers.get('webhook-id', '?')} {verdict[got.verified]}: {pretty}")

        receiver = WebhookReceiver(
            port=options["port"],
            secret=options["secret"],
            default=Reply(status=options["status"]),
            on_request=show,
        )
        self.stdout.write(f"Listening on {receiver.url} (any path). Ctrl-C to stop.")
        receiver.start()
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            receiver.stop()
