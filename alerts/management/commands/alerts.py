import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from alerts.models import Alert
from alerts.outbox import alert_fields
from alerts.selectors import alert_list_open, alert_list_recent
from alerts.services import alert_acknowledge, alert_resolve_by_person
from core.errors import DomainError


class Command(BaseCommand):
    help = (
        "Operator alerts: `alerts list` (open ones; --resolved: also those resolved lately), "
        "`alerts ack ID --by NAME`, `alerts resolve ID --by NAME`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        listing = actions.add_parser("list", help="open alerts, newest first")
        listing.add_argument("--resolved", action="store_true", help="also those resolved in the last days")
        listing.add_argument("--json", action="store_true", help="one JSON object per alert")
        for name, what in (("ack", "acknowledge: you are on it"), ("resolve", "resolve: it is handled")):
            action = actions.add_parser(name, help=what)
            action.add_argument("id", type=int, help="the alert's id (first column of `alerts list`)")
            action.add_argument("--by", required=True, help="who, kept on the alert (e.g. your e-mail)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "list":
            alerts = alert_list_open() + (alert_list_recent() if options["resolved"] else [])
            for alert in alerts:
                self.stdout.write(json.dumps(_as_json(alert)) if options["json"] else _as_line(alert))
            return
        by = options["by"].strip()
        if not by:
            raise CommandError("--by names who does it")
        change = alert_acknowledge if options["action"] == "ack" else alert_resolve_by_person
        try:
            alert = change(alert_id=options["id"], by=by)
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        self.stdout.write(_as_line(alert))


def _as_line(alert: Alert) -> str:
    since = f"{alert.raised_at:%Y-%m-%d %H:%M}"
    line = f"{alert.pk:<6} {alert.status:<12} {alert.kind} {alert.key} x{alert.count} since {since}"
    if alert.acknowledged_by:
        line += f"; acknowledged by {alert.acknowledged_by}"
    if alert.resolved_at:
        line += f"; resolved by {alert.resolved_by or 'the code'}"
    return f"{line}: {alert.message}"


def _as_json(alert: Alert) -> dict[str, Any]:
    return {"id": alert.pk, **alert_fields(alert)}
