"""The request id: one token per request, in the `X-Request-ID` response header, in every log line the
request causes (core/logs.py), in problem+json bodies (`requestId`), and carried into the Celery tasks
the request publishes (a message header), so one id follows a payment from the API call to the worker.

A client or proxy may send its own `X-Request-ID`; it is kept when it is a sane token (at most 64 of
`A-Z a-z 0-9 . _ -`), anything else is replaced, so a header can never inject text into a log line. The
same middleware writes the one access-log line per request (`kassa.access`): method, the URL *pattern*
(never the path or query string, which can carry password-reset tokens and other secrets), status and
duration.

Log lines also name the objects they are about (`invoice_id`, `withdrawal_uid`, `webhook_event_id`): those
in the URL (`/api/invoices/v1/regular/<invoice_id>`) and those a service names with `log_objects` while it
runs (the invoice a request created). Every later line of the request or task carries them, and so does
its access line.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.contrib.auth.signals import user_logged_in
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import empty

HEADER = "X-Request-ID"
CELERY_HEADER = "kassa_request_id"
_SANE = re.compile(r"[A-Za-z0-9._-]{1,64}")
# The session remembers the company of the dashboard user, for log lines only (never for access): so no
# log line costs a query.
SESSION_COMPANY_KEY = "_kassa_log_company"

_request_id: ContextVar[str | None] = ContextVar("kassa_request_id", default=None)
_request: ContextVar[HttpRequest | None] = ContextVar("kassa_request", default=None)
_objects: ContextVar[dict[str, str] | None] = ContextVar("kassa_log_objects", default=None)
# URL keyword -> the log field it fills.
URL_OBJECTS = {"invoice_id": "invoice_id", "uid": "withdrawal_uid", "event_id": "webhook_event_id"}

access_logger = logging.getLogger("kassa.access")


def current_request_id() -> str | None:
    """The id of the request (or the task) this code runs for; None outside both."""
    return _request_id.get()


def set_request_id(value: str | None) -> Any:
    """Set the id for what runs next in this context; returns the token `reset_request_id` takes."""
    return _request_id.set(value)


def reset_request_id(token: Any) -> None:
    _request_id.reset(token)


def log_objects(**ids: object) -> None:
    """Name what the current request or task acts on (`invoice_id=...`): its later log lines and its access
    line carry them. Outside a request or task, nothing to name."""
    current = _objects.get()
    if current is not None:
        current.update((name, str(value)) for name, value in ids.items())


def current_objects() -> dict[str, str]:
    return _objects.get() or {}


def start_objects() -> Any:
    """A fresh set of named objects for what runs next in this context (a task); `reset_objects` ends it."""
    return _objects.set({})


def reset_objects(token: Any) -> None:
    _objects.reset(token)


def sane_request_id(value: str | None) -> str:
    """The client's id when it is a sane token, else a new one (uuid4, hex)."""
    if value and _SANE.fullmatch(value):
        return value
    return uuid.uuid4().hex


def current_merchant_id() -> str | None:
    """The company behind the current request, when it is already known without a query: the API token's
    company (DRF puts the credential on the request), or the dashboard user's (remembered at log-in)."""
    request = _request.get()
    return None if request is None else merchant_id_of(request)


def merchant_id_of(request: HttpRequest) -> str | None:
    credential = request.__dict__.get("auth")
    company = getattr(credential, "company", None)
    if company is not None:
        return str(company.pk)
    user = request.__dict__.get("user")
    # The lazy user is only looked at when the request already loaded it: a log line never queries.
    if (
        user is None
        or getattr(user, "_wrapped", None) is empty
        or not getattr(user, "is_authenticated", False)
    ):
        return None
    session = request.__dict__.get("session")
    if session is None or not getattr(session, "accessed", False):
        return None
    value = session.get(SESSION_COMPANY_KEY)
    return str(value) if value else None


def _remember_company(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    company = getattr(user, "company", None)  # the owner's company (staff users have none)
    if company is not None:
        request.session[SESSION_COMPANY_KEY] = str(company.pk)


user_logged_in.connect(_remember_company, dispatch_uid="kassa-log-company")


class RequestIdMiddleware:
    """First in MIDDLEWARE: every response (a redirect, a 404, a 500 page) carries the id, and the access
    line times the whole request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = sane_request_id(request.headers.get(HEADER))
        request.request_id = request_id  # type: ignore[attr-defined]
        id_token = _request_id.set(request_id)
        request_token = _request.set(request)
        objects_token = _objects.set({})
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response[HEADER] = request_id
            _log_access(request, response, started)
            return response
        finally:
            _objects.reset(objects_token)
            _request.reset(request_token)
            _request_id.reset(id_token)

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: dict[str, Any]
    ) -> None:
        """The objects the URL names, for every line the view logs. A string from the path is kept only when
        it is a sane token: a path can never inject text into a log line."""
        for keyword, field in URL_OBJECTS.items():
            value = kwargs.get(keyword)
            if value is not None and _SANE.fullmatch(str(value)):
                log_objects(**{field: value})


def _log_access(request: HttpRequest, response: HttpResponseBase, started: float) -> None:
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    match = getattr(request, "resolver_match", None)
    route = f"/{match.route}" if match is not None and match.route else "(unmatched)"
    access_logger.info(
        "%s %s %s %.1f ms",
        request.method,
        route,
        response.status_code,
        duration_ms,
        extra={
            "method": request.method,
            "route": route,
            "status": response.status_code,
            "duration_ms": duration_ms,
            **current_objects(),
        },
    )


# --- Celery: the id travels with the message -------------------------------------------------------------


def add_to_message(headers: dict[str, Any] | None) -> None:
    """before_task_publish: a task published while a request (or a task) runs carries its id."""
    request_id = _request_id.get()
    if request_id and headers is not None:
        headers.setdefault(CELERY_HEADER, request_id)


def id_of_task(task_request: Any) -> str | None:
    """The id a task's log lines carry: the request's that published it, else the task's own id."""
    carried = getattr(task_request, CELERY_HEADER, None)
    if carried is None:
        carried = (getattr(task_request, "headers", None) or {}).get(CELERY_HEADER)
    if isinstance(carried, str) and _SANE.fullmatch(carried):
        return carried
    task_id = getattr(task_request, "id", None)
    return str(task_id) if task_id else None
