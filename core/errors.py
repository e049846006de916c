"""Domain errors and the one place that renders every API error as problem+json (docs/decisions.md).

A service raises a `DomainError` subclass (or a DRF exception); `problem_exception_handler` turns it into
`application/problem+json` with a stable `code`. Anything unmapped stays a 500: that is a bug to fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core.request_id import current_request_id

PROBLEM_CONTENT_TYPE = "application/problem+json"

# Codes that name a business rule; a 400 whose field errors all share one of these carries it as the
# top-level `code`, so integrators can branch on `code` alone.
RULE_CODES = frozenset(
    {
        "invalid_address",
        "below_minimum",
        "insufficient_balance",
        "tag_required",
        "tag_not_supported",
        "total_not_positive",
        "total_too_large",
        "unsupported_asset",
        "unsupported_currency",
        "too_many_items",
    }
)


@dataclass(frozen=True)
class FieldError:
    field: str
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "code": self.code, "message": self.message}


class DomainError(Exception):
    """A refused operation with a stable machine-readable code and an HTTP status."""

    status: int = 400
    code: str = "validation_error"
    default_detail: str = "The request is invalid."
    retry_after: int | None = None  # seconds, sent as Retry-After (a 503 that passes by itself)

    def __init__(self, detail: str | None = None, *, errors: Iterable[FieldError] = ()) -> None:
        self.detail = detail or self.default_detail
        self.errors = list(errors)
        super().__init__(self.detail)


class ValidationFailed(DomainError):
    """One or more fields failed; `errors` lists them (the top-level code is derived from them)."""

    def __init__(self, errors: Iterable[FieldError], detail: str | None = None) -> None:
        errors = list(errors)
        super().__init__(detail or _first_message(errors), errors=errors)
        self.code = _summary_code(errors)


class UnsupportedAsset(DomainError):
    code = "unsupported_asset"
    default_detail = "This asset is not supported."


class UnsupportedCurrency(DomainError):
    code = "unsupported_currency"
    default_detail = "This currency is not supported."


class Forbidden(DomainError):
    status = 403
    code = "forbidden"
    default_detail = "You may not perform this action."


class NotFound(DomainError):
    status = 404
    code = "not_found"
    default_detail = "Not found."


class InvalidState(DomainError):
    status = 409
    code = "invalid_state"
    default_detail = "This action is not allowed in the object's current status."


class IdempotencyConflict(DomainError):
    status = 409
    code = "idempotency_conflict"
    default_detail = "This Idempotency-Key was already used with a different request."


class PayloadTooLarge(DomainError):
    status = 413
    code = "payload_too_large"
    default_detail = "The request body is larger than 1 MiB."


def _first_message(errors: list[FieldError]) -> str:
    if not errors:
        return DomainError.default_detail
    first = errors[0]
    return f"{first.field}: {first.message}" if first.field else first.message


def _summary_code(errors: list[FieldError]) -> str:
    codes = {error.code for error in errors}
    if len(codes) == 1 and (code := codes.pop()) in RULE_CODES:
        return code
    return "validation_error"


def flatten_drf_errors(detail: Any, prefix: str = "") -> list[FieldError]:
    """DRF's nested error structure -> flat `items[1].to` style field errors, in input order."""
    if isinstance(detail, Mapping):
        flat: list[FieldError] = []
        for key, value in detail.items():
            if isinstance(key, int):  # DRF keys a list's failing children by index
                path = f"{prefix}[{key}]"
                flat.extend(flatten_drf_errors(value, path))
                continue
            name = "" if key == "non_field_errors" else str(key)
            path = f"{prefix}.{name}" if prefix and name else (prefix or name)
            flat.extend(flatten_drf_errors(value, path))
        return flat
    if isinstance(detail, list):
        if all(isinstance(item, drf.ErrorDetail | str) for item in detail):
            return [_leaf(item, prefix) for item in detail]
        flat = []
        for index, item in enumerate(detail):
            if item:  # DRF puts {} for list children without errors
                flat.extend(flatten_drf_errors(item, f"{prefix}[{index}]"))
        return flat
    return [_leaf(detail, prefix)]


def _leaf(item: Any, field: str) -> FieldError:
    code = getattr(item, "code", None) or "invalid"
    return FieldError(field=field, code=_DRF_CODE_ALIASES.get(code, code), message=str(item))


# DRF names a few failures differently from our published codes.
_DRF_CODE_ALIASES = {"invalid": "invalid", "does_not_exist": "not_found"}


def problem_body(
    status: int, code: str, detail: str, errors: Iterable[FieldError] = (), **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "code": code,
        "detail": detail,
    }
    errors = list(errors)
    if errors:
        body["errors"] = [error.as_dict() for error in errors]
    body.update(extra)
    request_id = current_request_id()
    if request_id:  # the X-Request-ID of the response: what a merchant quotes to support
        body["requestId"] = request_id
    return body


def problem_response(
    status: int,
    code: str,
    detail: str,
    errors: Iterable[FieldError] = (),
    headers: dict[str, str] | None = None,
) -> Response:
    return Response(
        problem_body(status, code, detail, errors),
        status=status,
        headers=headers,
        content_type=PROBLEM_CONTENT_TYPE,
    )


def problem_json_response(status: int, code: str, detail: str) -> JsonResponse:
    """For plain Django views (404/500 handlers, middleware) outside DRF."""
    return JsonResponse(
        problem_body(status, code, detail),
        status=status,
        content_type=PROBLEM_CONTENT_TYPE,
        json_dumps_params={"ensure_ascii": False},
    )


# DRF exception class -> (status, code). Order matters: subclasses first.
_DRF_MAP: list[tuple[type[drf.APIException], int, str]] = [
    (drf.NotAuthenticated, 401, "unauthorized"),
    (drf.AuthenticationFailed, 401, "unauthorized"),
    (drf.PermissionDenied, 403, "forbidden"),
    (drf.NotFound, 404, "not_found"),
    (drf.MethodNotAllowed, 405, "method_not_allowed"),
    (drf.NotAcceptable, 406, "not_acceptable"),
    (drf.UnsupportedMediaType, 415, "unsupported_media_type"),
    (drf.Throttled, 429, "rate_limited"),
    (drf.ParseError, 400, "validation_error"),
]


def problem_exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response | None:
    """DRF EXCEPTION_HANDLER: every API error leaves here as problem+json."""
    # Imported here: this module is loaded while DRF's own views module is still importing.
    from rest_framework.views import set_rollback

    if isinstance(exc, RequestDataTooBig):  # Django's own cap, met while DRF reads the body
        exc = PayloadTooLarge()
    elif isinstance(exc, Http404):
        exc = drf.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()

    if isinstance(exc, DomainError):
        set_rollback()
        retry = {} if exc.retry_after is None else {"Retry-After": str(exc.retry_after)}
        return problem_response(exc.status, exc.code, exc.detail, exc.errors, headers=retry)

    if isinstance(exc, drf.ValidationError):
        set_rollback()
        errors = flatten_drf_errors(exc.detail)
        failed = ValidationFailed(errors)
        return problem_response(400, failed.code, failed.detail, errors)

    for exc_class, status, code in _DRF_MAP:
        if isinstance(exc, exc_class):
            set_rollback()
            headers: dict[str, str] = {}
            if status == 401:
                headers["WWW-Authenticate"] = 'Bearer realm="api"'
            wait = getattr(exc, "wait", None)
            if status == 429 and wait is not None:
                headers["Retry-After"] = str(
                    max(1, int(wait + 0.999))
                )  # round up: never invite an early retry
            return problem_response(status, code, _detail_text(exc), headers=headers)

    if isinstance(exc, drf.APIException):
        set_rollback()
        return problem_response(exc.status_code, exc.default_code, _detail_text(exc))
    return None


def _detail_text(exc: drf.APIException) -> str:
    detail = exc.detail
    if isinstance(detail, list | dict):
        return "; ".join(error.message for error in flatten_drf_errors(detail))
    return str(detail)


@csrf_exempt  # no session is used here, and a CSRF 403 page would hide the real answer: no such endpoint
def api_not_found(request: HttpRequest) -> JsonResponse:
    return problem_json_response(404, "not_found", f"No endpoint at {request.path[:200]}.")


def as_drf_error(exc: ValidationFailed) -> drf.ValidationError:
    """A rule's ValidationFailed inside a serializer field: the same messages and codes, on that field."""
    return drf.ValidationError([drf.ErrorDetail(error.message, error.code) for error in exc.errors])
