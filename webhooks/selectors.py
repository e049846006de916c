from __future__ import annotations

from uuid import UUID

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from core.errors import NotFound
from payments.models import Company
from webhooks.models import WebhookAttempt, WebhookEvent


def _attempts_total() -> Coalesce:
    """Each event's attempts, counted per row: a JOIN with GROUP BY would group every event of the company
    before a page of them is taken (seconds with a million events)."""
    attempts = (
        WebhookAttempt.objects.filter(event=OuterRef("pk"))
        .order_by()
        .values("event")
        .annotate(total=Count("pk"))
        .values("total")
    )
    return Coalesce(Subquery(attempts), 0)


def webhook_list_events(
    *, company: Company, status: str | None = None, family: str | None = None
) -> QuerySet[WebhookEvent]:
    events = WebhookEvent.objects.filter(company=company).annotate(attempts_total=_attempts_total())
    if status:
        events = events.filter(status=status)
    if family:
        events = events.filter(family=family)
    return events.order_by("-created_at", "-pk")


def webhook_get_event(*, company: Company, event_id: UUID | str) -> WebhookEvent:
    event = (
        WebhookEvent.objects.filter(company=company, pk=event_id)
        .annotate(attempts_total=Count("attempts"))
        .prefetch_related("attempts")
        .first()
    )
    if event is None:
        raise NotFound("No such webhook event.")
    return event
