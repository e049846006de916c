"""OpenAPI description of Bearer auth and of the error answers, for drf-spectacular."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerFieldExtension
from drf_spectacular.utils import OpenApiResponse
from rest_framework.permissions import AllowAny

from payments.auth import SandboxEnabled
from payments.errors import PROBLEM_CONTENT_TYPE


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


# --- Request fields: the document says exactly what the server accepts -------------------------------------
# A client generated from the document (or schemathesis' positive data) sends only what these allow; the
# field classes keep the same rules (tests/test_schemathesis.py checks that such requests are not refused).


def decimal_pattern(*, whole: int, places: int, positive: bool = False, signed: bool = False) -> str:
    """The plain decimal strings `payments.money.wire_decimal` reads ("10", "0.015"; no "+", exponent or
    bare "."), with at most `whole` digits before the point and `places` after it, leading and trailing
    zeros not counted; `positive`: not zero."""
    fraction = rf"(?:\.[0-9]{{1,{places}}}0*)?"
    if positive:  # a significant digit before the point, or after it within `places`
        return rf"^(?:0*[1-9][0-9]{{0,{whole - 1}}}{fraction}|0+\.[0-9]{{0,{places - 1}}}[1-9]0*)$"
    return rf"^{'-?' if signed else ''}0*[0-9]{{1,{whole}}}{fraction}$"


def _money_schema(pattern: str, description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern, "description": description}


class AmountFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "payments.api.fields.AmountField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        from payments.api.fields import ThresholdField
        from payments.money import MAX_DECIMALS, MAX_INTEGER_DIGITS

        zero = isinstance(self.target, ThresholdField)
        pattern = decimal_pattern(whole=MAX_INTEGER_DIGITS, places=MAX_DECIMALS, positive=not zero)
        text = f"{'At least 0' if zero else 'Above 0'}, a decimal string; at most the asset's decimals."
        return _money_schema(pattern, self.target.help_text or text)


class PriceFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "invoices.api.serializers.PriceField"

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        from invoices.rules import PRICE_MAX_DECIMALS
        from payments.money import MAX_INTEGER_DIGITS

        pattern = decimal_pattern(whole=MAX_INTEGER_DIGITS, places=PRICE_MAX_DECIMALS, signed=True)
        return _money_schema(pattern, "A decimal string, any sign; the items' total must be above 0.")


def _enum(values: list[str], description: str) -> dict[str, Any]:
    return {"type": "string", "enum": values, "description": description}


# DRF's CharField refuses a NUL character in any text, and with trim_whitespace (the default) a text of
# only whitespace is blank. (It refuses a lone surrogate too, which is not Unicode text: no client sends one,
# and a range of surrogates is not a pattern every regex engine compiles.)
TEXT_PATTERN = r"^[^\u0000]*$"
NON_BLANK_TEXT_PATTERN = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
URL_PATTERN = (
    # The absolute http(s) URLs Django's URLValidator and the webhook guard take (a port from 1 to 65535),
    # narrowed to plain ASCII host names.
    r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    rf"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?)?\.[A-Za-z]{{2,63}}(?::{PORT})?"
    r"(?:/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?(?:\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$"
)
URL_OR_EMPTY = f"^(?:{URL_PATTERN[1:-1]})?$"  # "" clears the URL


def _code_sets() -> dict[str, tuple[list[str], str]]:
    """The sets a `StrictCharField(codes=...)` documents, as this deployment offers them now."""
    from chains.base import offered_assets, sandbox_codes
    from payments.assets import INVOICE_CURRENCIES

    offered = [asset.code for asset in offered_assets()]
    return {
        "offered": (offered, "A payment code (asset + network)."),
        "sandbox": (
            [code for code in sandbox_codes() if code in offered],
            "A payment code of the sandbox chain.",
        ),
        "base": (list(dict.fromkeys(asset.base for asset in offered_assets())), "An asset."),
        "currency": (list(INVOICE_CURRENCIES), "An invoice currency."),
    }


class StrictCharFieldScheme(OpenApiSerializerFieldExtension):
    """Codes as enums of the enabled set, read when the document is built (the server also takes any case;
    the document lists the canonical spelling); URLs and other text with the pattern the field keeps."""

    target_class = "payments.api.fields.StrictCharField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        field = self.target
        if field.codes is not None:
            values, text = _code_sets()[field.codes]
            return _enum(values, field.help_text or text)
        schema = auto_schema._map_serializer_field(field, direction, bypass_extensions=True)
        if field.url:
            schema["pattern"] = URL_OR_EMPTY
        elif field.trim_whitespace and not field.allow_blank:
            schema["pattern"] = NON_BLANK_TEXT_PATTERN
        else:
            schema["pattern"] = TEXT_PATTERN
        return schema


class CodeKeyedObjectScheme(OpenApiSerializerFieldExtension):
    """An object keyed by offered payment codes, not empty (`payments.api.fields.CodeKeyedField`)."""

    target_class = "payments.api.fields.CodeKeyedField"

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        from chains.base import offered_codes

        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        value = schema["additionalProperties"]
        properties = {code: value for code in offered_codes()}  # generators read these, not propertyNames
        described = {key: schema[key] for key in ("description",) if key in schema}
        return {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
            "minProperties": 1,
            **described,
        }


class NonEmptyListScheme(OpenApiSerializerFieldExtension):
    """A list of at least one item (invoice items)."""

    target_class = "payments.api.fields.NonEmptyListSerializer"

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        return {**schema, "minItems": 1}


class WithdrawalItemsScheme(OpenApiSerializerFieldExtension):
    """1 to WITHDRAWAL_MAX_ITEMS items, read when the document is built (the setting may change)."""

    target_class = "withdrawals.api.serializers.WithdrawalItemsField"

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        from django.conf import settings

        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        return {**schema, "minItems": 1, "maxItems": settings.WITHDRAWAL_MAX_ITEMS}
