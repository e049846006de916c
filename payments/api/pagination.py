"""`limit`/`offset` pagination, strict: a bad value is a 400, never a 500 or a silent default."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from payments.errors import FieldError, ValidationFailed

MAX_LIMIT = 1000
# Deeper than any real list; PostgreSQL's OFFSET is a bigint, and a larger number would fail in the database.
MAX_OFFSET = 10**9


def _whole_number(request: Request, name: str, *, default: int, low: int, high: int | None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    # ASCII digits only: int() would also take Arabic-Indic digits, " 10", "1_000" and "+5".
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
        raise ValidationFailed([FieldError(name, "invalid", f"must be a whole number from {low}")])
    value = int(raw)
    if value < low:
        raise ValidationFailed([FieldError(name, "invalid", f"must be at least {low}")])
    if high is not None and value > high:
        raise ValidationFailed([FieldError(name, "invalid", f"must be at most {high}")])
    return value


# For APIViews that paginate by hand (drf-spectacular documents pagination only on generic list views).
PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 50},
        description=f"Page size, 1 to {MAX_LIMIT} (default 50).",
    ),
    OpenApiParameter(
        "offset",
        {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "default": 0},
        description=f"Items to skip, 0 to {MAX_OFFSET}.",
    ),
]


def page_serializer(name: str, item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The schema of a page of `item`s: count, next, previous, results."""
    return type(
        name,
        (serializers.Serializer,),
        {
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": item(many=True),
        },
    )


class KassaPagination(LimitOffsetPagination):
    """`limit` 1..1000 (default 50), `offset` 0..10^9."""

    max_limit = MAX_LIMIT

    def get_limit(self, request: Request) -> int:
        return _whole_number(
            request, self.limit_query_param, default=self.default_limit or 50, low=1, high=MAX_LIMIT
        )

    def get_offset(self, request: Request) -> int:
        return _whole_number(request, self.offset_query_param, default=0, low=0, high=MAX_OFFSET)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            bounds = {"limit": (1, MAX_LIMIT), "offset": (0, MAX_OFFSET)}.get(parameter["name"])
            if bounds:
                parameter["schema"].update({"minimum": bounds[0], "maximum": bounds[1]})
        return parameters
