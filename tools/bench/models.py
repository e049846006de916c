from django.db import models


class BaselineRow(models.Model):
    """One row per baseline request: the floor cost of a single authenticated write."""

    # A bare UUID, not a ForeignKey: the baseline should not pay for a constraint check the floor lacks.
    company_id = models.UUIDField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"baseline row {self.pk}"
