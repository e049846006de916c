"""Serializer fields every API of Kassa shares: strict strings, payment codes, Decimal amounts."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rest_framework import serializers

from core.assets import check_amount_decimals
from core.errors import UnsupportedAsset, ValidationFailed
from core.money import MAX_DECIMALS, MAX_DIGITS, InvalidAmount, amount_input, wire_decimal
from core.offer import require_offered


class StrictCharField(serializers.CharField):
    """A string that must arrive as a JSON string (CharField alone would turn 42 into "42").

    For the document (payments/schema.py), `codes` names the set it takes ("offered" payment codes, those
    on the "sandbox" chain, "base" assets, invoice "currency" codes), `url` an absolute http(s) URL or "";
    the check stays the field's (CodeField) or the service's that takes it.
    """

    def __init__(self, *, codes: str | None = None, url: bool = False, **kwargs: Any) -> None:
        self.codes, self.url = codes, url
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.", code="invalid")
        return super().to_internal_value(data)  # type: ignore[no-any-return]


class CodeField(StrictCharField):
    """A payment code, matched case-insensitively; unknown codes are `unsupported_asset`."""

    def __init__(self, *, codes: str = "offered", **kwargs: Any) -> None:
        super().__init__(codes=codes, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            return require_offered(value).code
        except UnsupportedAsset as exc:
            raise serializers.ValidationError(exc.detail, code=UnsupportedAsset.code) from exc


class CodeKeyedField(serializers.DictField):
    """For the schema: an object whose keys are offered payment codes (the view checks them)."""


class NonEmptyListSerializer(serializers.ListSerializer):
    """For the schema: a list of at least one item (the field has allow_empty=False)."""


class WireDecimalField(serializers.DecimalField):
    """A DecimalField that takes only the wire format: a JSON number or a plain ASCII decimal string.

    DRF's own DecimalField runs the input through `Decimal(str(data).strip())`, which also takes spaces,
    "1_000" and non-ASCII digits; `core.money.wire_decimal` refuses those before DRF sees the value.
    """

    def to_internal_value(self, data: Any) -> Decimal:
        try:
            exact = wire_decimal(data)
        except InvalidAmount as exc:
            raise serializers.ValidationError(str(exc), code="invalid") from exc
        value: Decimal = super().to_internal_value(exact)
        return value


class AmountField(serializers.DecimalField):
    """A positive amount as a JSON number or numeric string, read as Decimal (never through float), by the
    rule the pages apply too (`core.money.amount_input`); the caller checks the asset's decimals."""

    allow_zero = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_digits=MAX_DIGITS, decimal_places=MAX_DECIMALS, **kwargs)

    def to_internal_value(self, data: Any) -> Decimal:
        try:
            return amount_input(data, allow_zero=self.allow_zero)
        except InvalidAmount as exc:
            raise serializers.ValidationError(str(exc), code=exc.code) from exc


class ThresholdField(AmountField):
    """An amount that may be 0 (an auto-withdrawal threshold)."""

    allow_zero = True


def check_asset_decimals(amount: Decimal, code: str, field: str = "amount") -> None:
    """`core.assets.check_amount_decimals` inside a serializer's validate(): the error on `field`."""
    try:
        check_amount_decimals(amount, code, field)
    except ValidationFailed as exc:
        errors = [serializers.ErrorDetail(error.message, error.code) for error in exc.errors]
        raise serializers.ValidationError({field: errors}) from exc


# The OpenAPI document's schemas of these fields (drf-spectacular extensions register when imported).
from payments.api import schema_fields  # noqa: E402,F401
