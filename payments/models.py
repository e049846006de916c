from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from payments.assets import BASE_ASSETS


def _all_base_assets() -> list[str]:
    return list(BASE_ASSETS)


class Company(models.Model):
    """The merchant. Its public token is kept only as a SHA-256 hash; its signing secret encrypted."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Short, human-sized and never reused: the first part of withdrawal uids ("007-1042").
    number = models.PositiveIntegerField(unique=True)
    name = models.CharField(max_length=200)
    logo_url = models.URLField(max_length=2048, blank=True)
    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="company")
    token_hash = models.CharField(max_length=64, unique=True)
    token_prefix = models.CharField(max_length=16)
    token_rotated_at = models.DateTimeField()
    signing_secret_encrypted = models.TextField()
    webhook_url = models.CharField(max_length=2048, blank=True)
    redirect_url = models.CharField(max_length=2048, blank=True)
    allowed_assets = models.JSONField(default=_all_base_assets)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "companies"
        constraints = [
            models.CheckConstraint(condition=models.Q(number__gt=0), name="company_number_positive")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.uid_prefix})"

    @property
    def uid_prefix(self) -> str:
        return f"{self.number:03d}"
