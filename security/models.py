"""Second factors of dashboard users and the audit trail of security-relevant actions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from payments.models import Company


class TotpDevice(models.Model):
    """An authenticator app (RFC 6238) of one user. Active only once confirmed with a code from it."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="totp_device"
    )
    secret_encrypted = models.TextField()  # base32 secret, encrypted like the signing secret (core.keys)
    is_confirmed = models.BooleanField(default=False)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    # The newest 30-second time step a code was accepted for: that code and older ones are refused (replay).
    last_used_step = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"TOTP of user {self.user_id} ({'confirmed' if self.is_confirmed else 'pending'})"


class RecoveryCode(models.Model):
    """One single-use code for when the authenticator is lost; only its SHA-256 is kept."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="recovery_codes"
    )
    code_hash = models.CharField(max_length=64)
    used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "code_hash"], name="recovery_code_user_hash_unique")
        ]

    def __str__(self) -> str:
        return f"recovery code of user {self.user_id}"


class AuditEvent(models.Model):
    """Who did what, when and from where, in a company's account. Append-only; `detail` never holds a
    secret."""

    company = models.ForeignKey(
        Company, on_delete=models.PROTECT, related_name="audit_events", db_index=False
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=64)
    detail = models.CharField(max_length=255, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # The company's log, newest first (keyset pagination on created_at, pk).
            models.Index(fields=["company", "-created_at", "-id"], name="audit_company_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.action} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class CompanySecurity(models.Model):
    """A company's own security rules, set by its owner on the security page. No row: the defaults."""

    company = models.OneToOneField(Company, on_delete=models.CASCADE, related_name="security")
    # Every member must log in with an authenticator: one without is sent to the enrolment page
    # (security.middleware). The API's tokens are not affected.
    require_2fa = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"security of company {self.company_id}"
