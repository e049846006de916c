"""OpenAPI description of Bearer auth for drf-spectacular."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "payments.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {"type": "http", "scheme": "bearer", "description": "The merchant's public token."}


# --- Errors: every operation documents the problem+json answers the API gives ------------------------------

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
    },
    "required": ["type", "title", "status", "code", "detail"],
}
ERROR_STATUSES = {
    "400": "Invalid input or a business rule refused it; nothing was changed.",
    "401": "Missing or unknown token.",
    "403": "Forbidden.",
    "404": "No such object (or another merchant's), or no such endpoint.",
    "405": "Method not allowed.",
    "409": "Not allowed in the object's current status, or an Idempotency-Key conflict.",
    "413": "The body is larger than 1 MiB.",
    "415": "Not UTF-8 JSON.",
    "429": "Rate limited; see Retry-After.",
    "503": "The database cannot be reached; nothing was done. See Retry-After.",
}


def add_problem_responses(result: dict, generator: object, request: object, public: bool) -> dict:  # type: ignore[type-arg]
    """drf-spectacular postprocessing hook: a `Problem` component, and every error status on every
    operation (any request can be malformed, too large, rate limited or meet a database outage)."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = PROBLEM_SCHEMA
    problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for status, description in ERROR_STATUSES.items():
                operation["responses"].setdefault(status, {"description": description, "content": problem})
    return result
