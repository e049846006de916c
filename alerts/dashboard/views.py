"""The staff page of operator alerts: open and recent alerts, acknowledge and resolve."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Concatenate, ParamSpec

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from alerts.models import Alert
from alerts.selectors import RECENT_DAYS, alert_list_open, alert_list_recent
from alerts.services import alert_acknowledge, alert_resolve_by_person
from core.errors import DomainError, NotFound
from payments.dashboard.views.common import account_view
from payments.models import Company

P = ParamSpec("P")
StaffView = Callable[Concatenate[HttpRequest, "Company | None", P], HttpResponseBase]


def staff_view(view: StaffView[P]) -> Callable[Concatenate[HttpRequest, P], HttpResponseBase]:
    """Logged in and staff; anyone else (a merchant) gets the 404 of a page that does not exist. A staff
    user may own no company: the view gets None, and the navigation shows no company name."""

    @wraps(view)
    def wrapped(
        request: HttpRequest, company: Company | None, *args: P.args, **kwargs: P.kwargs
    ) -> HttpResponseBase:
        if not getattr(request.user, "is_staff", False):
            raise Http404("No such page.")
        return view(request, company, *args, **kwargs)

    return account_view(wrapped)


def _by(request: HttpRequest) -> str:
    user = request.user
    return str(getattr(user, "email", "") or user.get_username())


@staff_view
def alert_status(request: HttpRequest, company: Company | None) -> HttpResponse:
    context = {
        "company": company,
        "nav": "alerts",
        "open_alerts": alert_list_open(),
        "recent_alerts": alert_list_recent(),
        "recent_days": RECENT_DAYS,
    }
    return render(request, "alerts/alerts.html", context)


@require_POST
@staff_view
def alert_acknowledge_view(request: HttpRequest, company: Company | None, alert_id: int) -> HttpResponse:
    return _by_person(request, alert_id, alert_acknowledge, "Acknowledged {}: raising it again tells nobody.")


@require_POST
@staff_view
def alert_resolve_view(request: HttpRequest, company: Company | None, alert_id: int) -> HttpResponse:
    return _by_person(request, alert_id, alert_resolve_by_person, "Resolved {}: raised again, it opens anew.")


def _by_person(
    request: HttpRequest, alert_id: int, transition: Callable[..., Alert], done: str
) -> HttpResponse:
    """A person moves the alert (`transition(alert_id=, by=)`); the page says what happened."""
    try:
        alert = transition(alert_id=alert_id, by=_by(request))
    except NotFound as exc:
        raise Http404("No such alert.") from exc
    except DomainError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, done.format(f"{alert.kind} {alert.key}"))
    return redirect("dashboard:alerts")
