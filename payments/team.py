"""The people of a company: its members with their roles (payments.roles), and the invitations that make
new ones. Imported by payments.models, so that Django finds them there."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from payments.roles import ROLES


class Membership(models.Model):
    """A user's place in a company: one company per user, a role each. The company's founding owner is a
    member too (Company.owner stays the account it was made with)."""

    company = models.ForeignKey("payments.Company", on_delete=models.CASCADE, related_name="members")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership")
    role = models.CharField(max_length=16)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(role__in=ROLES), name="membership_role_valid")
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role} of {self.company_id})"


class Invitation(models.Model):
    """A one-time link to join a company with a role, sent by e-mail; kept as the hash of its token."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey("payments.Company", on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(role__in=ROLES), name="invitation_role_valid")
        ]

    def __str__(self) -> str:
        return f"{self.email} as {self.role}"
