"""OpenAPI description of Bearer auth and of the error answers, for drf-spectacular."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse
from rest_framework.permissions import AllowAny

from core.errors import PROBLEM_CONTENT_TYPE
from payments.auth import SandboxEnabled


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "payments.api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {"type": "http", "scheme": "bearer", "description": "The merchant's public token."}


# --- Errors: every operation documents the problem+json answers it can give --------------------------------

PROBLEM_SCHEMA = {
    "type": "object",
    "description": "An error (RFC 9457 problem details); `code` is stable and machine-readable.",
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "code": {"type": "string"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                },
                "required": ["field", "code", "message"],
            },
        },
        "requestId": {"type": "string", "description": "This request's id, as in the X-Request-ID header."},
    },
    "required": ["type", "title", "status", "code", "detail"],
}
ERROR_STATUSES = {
    "400": "Invalid input or a business rule refused it; nothing was changed.",
    "401": "Missing or unknown token.",
    "403": "A named token without the scope this operation needs (named in `detail`), or used from outside "
    "its allowed networks.",
    "413": "The body is larger than 1 MiB.",
    "415": "Not UTF-8 JSON.",
    "429": "Rate limited; see Retry-After.",
    "503": "The database cannot be reached; nothing was done. See Retry-After.",
}
OPTIONAL_AUTH_REFUSED = "An unknown or malformed token (the token itself is optional here)."
NO_SUCH_OBJECT = "no such object, or another merchant's"
SANDBOX_OFF = "the sandbox is not enabled on this deployment"


def problem(description: str) -> OpenApiResponse:
    """An error answer a view declares itself (`responses={409: problem("...")}`): one the hook cannot
    derive (a 409 of a state machine), or a derived one with a more precise description. The hook gives it
    the Problem body."""
    return OpenApiResponse(description=description)


LINKS = "x-kassa-links"


def links(status: int, parameter: str, value: str, *operation_ids: str) -> dict[str, Any]:
    """OpenAPI links, for `extend_schema(extensions=...)`: the `value` of the `status` response (a runtime
    expression such as "$response.body#/id") is `parameter` of each of `operation_ids`, so a client or
    schemathesis can chain create -> read. The hook moves them onto the response."""
    return {
        LINKS: {
            str(status): {op: {"operationId": op, "parameters": {parameter: value}} for op in operation_ids}
        }
    }


def _derived_statuses(operation: dict[str, Any], view: Any) -> dict[str, str]:
    """The error statuses that follow from how the operation is built (its input; its view's
    authentication, permissions and throttles), with their descriptions. 503 can meet any request."""
    parameters = operation.get("parameters", [])
    has_body = "requestBody" in operation
    statuses = {}
    if has_body or any(parameter["in"] in ("query", "header") for parameter in parameters):
        statuses["400"] = ERROR_STATUSES["400"]
    if view is None or view.authentication_classes:
        optional = view is not None and AllowAny in view.permission_classes
        statuses["401"] = OPTIONAL_AUTH_REFUSED if optional else ERROR_STATUSES["401"]
        statuses["403"] = ERROR_STATUSES["403"]
    missing = []
    if any(parameter["in"] == "path" for parameter in parameters):
        missing.append(NO_SUCH_OBJECT)
    if view is not None and SandboxEnabled in view.permission_classes:
        missing.append(SANDBOX_OFF)
    if missing:
        statuses["404"] = "; or ".join(missing).capitalize() + "."
    if has_body:
        statuses.update({status: ERROR_STATUSES[status] for status in ("413", "415")})
    if view is not None and view.throttle_classes:
        statuses["429"] = ERROR_STATUSES["429"]
    statuses["503"] = ERROR_STATUSES["503"]
    return statuses


def add_problem_responses(result: dict, generator: Any, request: object, public: bool) -> dict:  # type: ignore[type-arg]
    """drf-spectacular postprocessing hook: a `Problem` component; on every operation, the error statuses
    it can answer (derived, plus those its view declares with `problem()`), each with the Problem body; the
    links a view declares with `links()`, on their response."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = PROBLEM_SCHEMA
    content = {PROBLEM_CONTENT_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    views = {
        (path, method.lower()): getattr(callback, "cls", None)
        for path, _, method, callback in getattr(generator, "endpoints", None) or []
    }
    for path, path_item in result.get("paths", {}).items():
        for method, operation in path_item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for status, named in operation.pop(LINKS, {}).items():
                responses[status].setdefault("links", {}).update(named)
            view = views.get((path, method))
            for status, description in _derived_statuses(operation, view).items():
                responses.setdefault(status, {"description": description})
            for status, response in responses.items():
                if status[0] in "45" and "content" not in response:
                    response["content"] = content
            operation["responses"] = dict(sorted(responses.items()))
    return result
