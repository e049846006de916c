"""Webhook deliveries: events with filters, one event with its attempts, redelivery."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.errors import DomainError, NotFound
from payments.dashboard.views.common import merchant_view, paginate
from payments.models import Company
from webhooks.dashboard.forms import WebhookEventFilterForm
from webhooks.selectors import webhook_get_event, webhook_list_events
from webhooks.services import webhook_redeliver


@merchant_view
def event_list(request: HttpRequest, company: Company) -> HttpResponse:
    filters = WebhookEventFilterForm(request.GET)
    filters.is_valid()  # unknown values are dropped, never a 500
    events = webhook_list_events(
        company=company,
        status=filters.cleaned_data.get("status") or None,
        family=filters.cleaned_data.get("family") or None,
    )
    context = {"company": company, "nav": "webhooks", "filters": filters, "page": paginate(request, events)}
    return render(request, "webhooks/event_list.html", context)


@merchant_view
def event_detail(request: HttpRequest, company: Company, event_id: UUID) -> HttpResponse:
    try:
        event = webhook_get_event(company=company, event_id=event_id)
    except NotFound as exc:
        raise Http404("No such event.") from exc
    context = {"company": company, "nav": "webhooks", "event": event, "attempts": list(event.attempts.all())}
    return render(request, "webhooks/event_detail.html", context)


@require_POST
@merchant_view
def event_redeliver(request: HttpRequest, company: Company, event_id: UUID) -> HttpResponse:
    try:
        webhook_redeliver(company=company, event_id=event_id)
    except NotFound as exc:
        raise Http404("No such event.") from exc
    except DomainError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(
            request, "Redelivery queued: the event is sent again from the start of the schedule."
        )
    return redirect("dashboard:event_detail", event_id=event_id)
