from __future__ import annotations

from uuid import UUID

from django.db.models import Count, QuerySet

from payments.errors import NotFound
from payments.models import Company
from webhooks.models import WebhookEvent


def webhook_list_events(
    *, company: Company, status: str | None = None, family: str | None = None
) -> QuerySet[WebhookEvent]:
    events = WebhookEvent.objects.filter(company=company).annotate(attempts_total=Count("attempts"))
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
