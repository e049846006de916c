"""The audit log page and its CSV export: the same filters (member, action, UTC days), newest first."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from datetime import UTC

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from core.csvcells import spreadsheet_safe as _cell
from payments.dashboard.views.common import merchant_view, paginate
from payments.models import Company
from security.dashboard.forms import AuditFilterForm
from security.models import AuditEvent
from security.selectors import action_label, audit_event_list_for_company, audit_member_choices

NAV = "security"
CSV_HEADER = ["time", "member", "action", "action_label", "detail", "ip", "user_agent"]


def _filtered(request: HttpRequest, company: Company) -> tuple[AuditFilterForm, QuerySet[AuditEvent]]:
    form = AuditFilterForm(request.GET, members=audit_member_choices(company=company))
    return form, audit_event_list_for_company(company=company, **form.selector_filters())


def _member(event: AuditEvent) -> str:
    return event.user.email if event.user is not None else ""


@merchant_view
def audit_log(request: HttpRequest, company: Company) -> HttpResponse:
    form, events = _filtered(request, company)
    page = paginate(request, events)
    rows = [(event, action_label(event.action)) for event in page.object_list]
    context = {"company": company, "nav": NAV, "page": page, "rows": rows, "filters": form}
    return render(request, "security/security_audit.html", context)


class _Echo:
    """csv.writer target that hands each written line back (for a streamed response)."""

    def write(self, value: str) -> str:
        return value


def _rows(events: Iterable[AuditEvent]) -> Iterator[list[str]]:
    yield CSV_HEADER
    for event in events:
        yield [
            event.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            _cell(_member(event)),
            event.action,
            action_label(event.action),
            _cell(event.detail),
            event.ip or "",
            _cell(event.user_agent),
        ]


@merchant_view
def audit_export(request: HttpRequest, company: Company) -> StreamingHttpResponse:
    """The log as CSV with the page's filters; streamed, so a long history never sits in memory."""
    _, events = _filtered(request, company)
    writer = csv.writer(_Echo())
    chunks = events.iterator(chunk_size=500)
    response = StreamingHttpResponse(
        (writer.writerow(row) for row in _rows(chunks)), content_type="text/csv; charset=utf-8"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="audit-{company.uid_prefix}-{stamp}.csv"'
    return response
