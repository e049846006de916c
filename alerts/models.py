from __future__ import annotations

from django.db import models


class AlertStatus(models.TextChoices):
    OPEN = "open"
    RESOLVED = "resolved"


class Alert(models.Model):
    """One condition a person must look at, deduplicated by (kind, key) while it is open.

    Raising an open alert again counts it and refreshes its message; it is resolved by the code that sees
    the condition gone (a funded wallet, a node back up) or by a person (`manage.py chain status` lists it).
    """

    kind = models.CharField(max_length=64)  # e.g. "deposit_reversed", "payout_wallet_short", "node_down"
    key = models.CharField(max_length=200)  # what it is about, e.g. "ltc" or "ltc:<txid>:<vout>"
    message = models.TextField()
    status = models.CharField(max_length=16, choices=AlertStatus.choices, default=AlertStatus.OPEN)
    count = models.PositiveIntegerField(default=1)
    raised_at = models.DateTimeField(auto_now_add=True)
    last_raised_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "key"], condition=models.Q(status="open"), name="alert_open_once"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=AlertStatus.values), name="alert_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key}: {self.message}"
