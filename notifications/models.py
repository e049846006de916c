"""What members want to hear about, the company's receipt switch, and the e-mail outbox.

A `Notification` row is one e-mail to one recipient, written in the transaction of the event it tells
(invoices, withdrawals, chains, security, payments call notifications.events there); its facts are fixed
then, its words are rendered by the worker in the recipient's language (notifications.delivery).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.outbox import OutboxRow


class Kind(models.TextChoices):
    INVOICE_PAID = "invoice_paid", _("An invoice is paid")
    INVOICE_DECISION = "invoice_decision", _("An invoice needs a decision (paid too little or too much)")
    WITHDRAWAL_DONE = "withdrawal_done", _("A withdrawal is done")
    WITHDRAWAL_REJECTED = "withdrawal_rejected", _("A withdrawal is rejected")
    WITHDRAWAL_HELD = "withdrawal_held", _("A withdrawal waits for an approval")
    DEPOSIT_REVERSED = "deposit_reversed", _("A credited deposit was reversed by the chain")
    NEW_DEVICE = "new_device", _("A log-in to my account from a new device")
    TOKEN_CREATED = "token_created", _("An API token is created")
    RECEIPT = "receipt", _("A receipt to the client")  # to the invoice's client, never a member's choice


MEMBER_KINDS = [kind for kind in Kind if kind != Kind.RECEIPT]


class Preference(models.Model):
    """A member's own choice; without a row, the defaults of their role (notifications.preferences)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    kinds = models.JSONField(default=list)  # the kinds this member is mailed about
    language = models.CharField(max_length=8, blank=True)  # "": the site's LANGUAGE_CODE
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user}: {', '.join(self.kinds) or 'nothing'}"


class CompanySettings(models.Model):
    """The company's own switch: a receipt to the client's e-mail when an invoice is done (off: none, and
    the pay page promises none)."""

    company = models.OneToOneField(
        "payments.Company", on_delete=models.CASCADE, related_name="notification_settings"
    )
    receipts_enabled = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.company_id}: receipts {'on' if self.receipts_enabled else 'off'}"


class ClientLanguage(models.Model):
    """The pay page's language when the client gave their e-mail: their receipt is written in it."""

    invoice_id = models.UUIDField(primary_key=True)
    language = models.CharField(max_length=8)

    def __str__(self) -> str:
        return f"{self.invoice_id}: {self.language}"


class KnownDevice(models.Model):
    """A (user agent, network) a user logged in from: a log-in from a pair not seen for DEVICE_MEMORY_DAYS
    is a new device. The network is the /24 (IPv4) or /48 (IPv6) of the address; the agent is hashed."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    agent_hash = models.CharField(max_length=64)
    network = models.CharField(max_length=64)
    last_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "agent_hash", "network"], name="known_device_once")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} from {self.network}"


class Notification(OutboxRow):
    """The e-mail outbox: one row per (event, recipient), never two (`notification_once`)."""

    # The id, status, attempts and lease: core.outbox.OutboxRow.
    event_key = models.CharField(max_length=200)  # e.g. "invoice_paid:<invoice id>"
    kind = models.CharField(max_length=32, choices=Kind.choices)
    company = models.ForeignKey("payments.Company", on_delete=models.CASCADE, related_name="+")
    recipient = models.EmailField(max_length=254)
    language = models.CharField(max_length=8)
    context = models.JSONField(default=dict)  # the facts at the event: no secret ever goes in here

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["event_key", "recipient"], name="notification_once"),
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "sent", "failed"]), name="notification_status"
            ),
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="notification_due")]

    def __str__(self) -> str:
        return f"{self.kind} to {self.recipient}: {self.status}"
