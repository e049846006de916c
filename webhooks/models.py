from __future__ import annotations

import uuid

from django.db import models

from payments.models import Company


class WebhookEvent(models.Model):
    """The outbox row: written in the transaction of the state change, holding the exact body sent."""

    class Family(models.TextChoices):
        INVOICE = "invoice"
        WITHDRAWAL = "withdrawal"
        DEPOSIT = "deposit"

    class Status(models.TextChoices):
        PENDING = "pending"  # due at next_attempt_at
        DELIVERED = "delivered"
        FAILED = "failed"  # every scheduled attempt failed; can be redelivered
        SKIPPED = "skipped"  # no webhook URL when it was due; can be redelivered

    # Also the `webhook-id` header: stable across retries and redeliveries, receivers dedupe on it.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: webhook_company_idx starts with it (every index costs each outbox insert).
    company = models.ForeignKey(
        Company, on_delete=models.CASCADE, related_name="webhook_events", db_index=False
    )
    family = models.CharField(max_length=16, choices=Family.choices)
    object_id = models.CharField(max_length=64)  # invoice id, withdrawal uid, deposit id (webhook_object_idx)
    event_status = models.CharField(max_length=16)  # the `status` inside the body, for lists and filters
    body = models.TextField()  # compact JSON, UTF-8; signed and sent byte for byte
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempt_count = models.PositiveIntegerField(default=0)  # attempts in the current series (retry schedule)
    # Attempts ever recorded, across every series: the number of the last one. The UPDATE that records an
    # attempt bumps it and numbers the attempt with it (webhooks.delivery._record). A database default too,
    # for inserts that name their columns (webhook_publish_changed) and for processes of the version before.
    attempts_recorded = models.PositiveIntegerField(default=0, db_default=0)
    next_attempt_at = models.DateTimeField(null=True)
    # A claimed delivery holds the lease; a worker killed mid-delivery lets it expire and the poller re-sends.
    lease_token = models.UUIDField(null=True)
    lease_expires_at = models.DateTimeField(null=True)
    delivered_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_due_idx"),
            models.Index(fields=["company", "-created_at"], name="webhook_company_idx"),
            # Equality lookups only: a plain index, without the LIKE index `db_index` adds on PostgreSQL.
            models.Index(fields=["object_id"], name="webhook_object_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "delivered", "failed", "skipped"]),
                name="webhook_event_status_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(family__in=["invoice", "withdrawal", "deposit"]),
                name="webhook_event_family_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.family}:{self.object_id}:{self.event_status} ({self.status})"


class WebhookAttempt(models.Model):
    """One POST: what was sent where, and what came back (or why nothing did)."""

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()  # 1, 2, 3 ... across all series of the event
    url = models.CharField(max_length=2048)
    request_headers = models.JSONField(default=dict)
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True)
    response_excerpt = models.TextField(blank=True)  # first 1 KiB
    error = models.CharField(max_length=500, blank=True)
    succeeded = models.BooleanField()

    class Meta:
        ordering = ["number"]
        constraints = [
            models.UniqueConstraint(fields=["event", "number"], name="webhook_attempt_number_unique")
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.event_id}: {self.status_code or self.error}"
