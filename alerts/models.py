from __future__ import annotations

from django.db import models

from core.outbox import OutboxRow


class AlertStatus(models.TextChoices):
    OPEN = "open", "Raised"  # raised, nobody has said they look at it yet
    ACKNOWLEDGED = "acknowledged"  # a person looks at it; raised again, it counts but tells nobody
    RESOLVED = "resolved"


# Statuses of an alert still open: one row per (kind, key) among them; the open-alerts gauge counts them.
OPEN_STATUSES = (AlertStatus.OPEN, AlertStatus.ACKNOWLEDGED)


class Alert(models.Model):
    """One condition a person must look at, deduplicated by (kind, key) while it is open (raised or
    acknowledged).

    Raising an open alert again counts it and refreshes its message; it is resolved by the code that sees
    the condition gone (a funded wallet, a node back up) or by a person (the staff page /dashboard/alerts/,
    `manage.py alerts`). The lifecycle is in alerts/services.py.
    """

    kind = models.CharField(max_length=64)  # e.g. "deposit_reversed", "payout_wallet_short", "node_down"
    key = models.CharField(max_length=200)  # what it is about, e.g. "ltc" or "ltc:<txid>:<vout>"
    message = models.TextField()
    status = models.CharField(max_length=16, choices=AlertStatus.choices, default=AlertStatus.OPEN)
    count = models.PositiveIntegerField(default=1)
    raised_at = models.DateTimeField(auto_now_add=True)
    last_raised_at = models.DateTimeField()
    acknowledged_at = models.DateTimeField(null=True)
    # Who, as text (the user's e-mail, or what the command line was given): it outlives the account.
    acknowledged_by = models.CharField(max_length=254, blank=True)
    resolved_at = models.DateTimeField(null=True)
    resolved_by = models.CharField(max_length=254, blank=True)  # "": the code saw the condition gone

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "key"],
                condition=models.Q(status__in=["open", "acknowledged"]),
                name="alert_open_once",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=AlertStatus.values), name="alert_status_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "raised_at"], name="alert_status_raised")]

    def __str__(self) -> str:
        return f"{self.kind} {self.key}: {self.message}"


class AlertNotification(OutboxRow):
    """The outbox of the alert channels: one row per channel per opening (or resolution) of an alert,
    written in the transaction that opened (or resolved) it; its id is the event id a receiver dedupes on.

    `body` is the JSON the webhook sends, fixed when the row is written; the e-mail says the same in words.
    """

    class Channel(models.TextChoices):
        EMAIL = "email"
        WEBHOOK = "webhook"

    class Event(models.TextChoices):
        OPENED = "opened"
        RESOLVED = "resolved"

    # The id, status (FAILED also when the channel is no longer set), attempts, lease: core.outbox.OutboxRow.
    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="notifications")
    event = models.CharField(max_length=16, choices=Event.choices)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    body = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["alert", "event", "channel"], name="alert_notification_once"),
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "sent", "failed"]), name="alert_notification_status"
            ),
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="alert_notification_due")]

    def __str__(self) -> str:
        return f"{self.event} {self.channel} of alert {self.alert_id}: {self.status}"
