"""The OpenAPI document's request fields say exactly what the server accepts: drf-spectacular extensions
for the field classes of payments.api.fields, registered when this module is imported (payments.api.fields
imports it last). A client generated from the document (or schemathesis' positive data) sends only what
these allow; the field classes keep the same rules (tests/test_schemathesis.py checks that such requests
are not refused)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent


def decimal_pattern(*, whole: int, places: int, positive: bool = False, signed: bool = False) -> str:
    """The plain decimal strings `core.money.wire_decimal` reads ("10", "0.015"; no "+", exponent or
    bare "."), with at most `whole` digits before the point and `places` after it, leading and trailing
    zeros not counted; `positive`: not zero."""
    fraction = rf"(?:\.[0-9]{{1,{places}}}0*)?"
    if positive:  # a significant digit before the point, or after it within `places`
        return rf"^(?:0*[1-9][0-9]{{0,{whole - 1}}}{fraction}|0+\.[0-9]{{0,{places - 1}}}[1-9]0*)$"
    return rf"^{'-?' if signed else ''}0*[0-9]{{1,{whole}}}{fraction}$"


def money_schema(pattern: str, description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern, "description": description}


class AmountFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "payments.api.fields.AmountField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        from core.money import MAX_DECIMALS, MAX_INTEGER_DIGITS

        zero = self.target.allow_zero  # ThresholdField: 0 is a threshold
        pattern = decimal_pattern(whole=MAX_INTEGER_DIGITS, places=MAX_DECIMALS, positive=not zero)
        text = f"{'At least 0' if zero else 'Above 0'}, a decimal string; at most the asset's decimals."
        return money_schema(pattern, self.target.help_text or text)


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


# Each set is one named component: the same field name (`asset`, `network`) carries different sets in
# different bodies, which drf-spectacular's enum naming would otherwise resolve with hashed names (and warn).
CODE_SET_COMPONENTS = {
    "offered": "OfferedPaymentCode",
    "sandbox": "SandboxPaymentCode",
    "base": "OfferedAsset",
    "currency": "InvoiceCurrencyCode",
}


def _code_sets() -> dict[str, tuple[list[str], str]]:
    """The sets a `StrictCharField(codes=...)` documents, as this deployment offers them now."""
    from core.assets import INVOICE_CURRENCIES
    from core.offer import offered_assets, sandbox_codes

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
            name = CODE_SET_COMPONENTS[field.codes]
            component = ResolvedComponent(
                name=name,
                type=ResolvedComponent.SCHEMA,
                object=name,
                schema={"type": "string", "enum": values, "description": text},
            )
            auto_schema.registry.register_on_missing(component)
            return component.ref
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
        from core.offer import offered_codes

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
