"""List pages: `limit` with `offset`, or `limit` with `after` (keyset, `core.keyset`); strict: a bad value
is a 400, never a 500 or a silent default."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from core.errors import FieldError, ValidationFailed
from core.keyset import KeysetPage, keyset_page, parse_position

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
    OpenApiParameter(
        "after",
        str,
        description=(
            "Keyset paging instead of offset: empty for the newest page, then the value in the previous "
            "page's `next` link. Pages cost the same at any depth; `count` is null."
        ),
    ),
]


def page_serializer(name: str, item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The schema of a page of `item`s: count, next, previous, results."""
    return type(
        name,
        (serializers.Serializer,),
        {
            "count": serializers.IntegerField(allow_null=True),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": item(many=True),
        },
    )


class KassaPagination(LimitOffsetPagination):
    """`limit` 1..1000 (default 50), and `offset` 0..10^9 or `after` (a keyset position; empty: the newest).

    An `after` page reads its rows through the list's index from the position on: no count (null), no
    offset, a `next` link carrying the last row's position, no `previous` (clients keep the positions)."""

    max_limit = MAX_LIMIT
    after_query_param = "after"
    keyset: KeysetPage[Any] | None = None

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        after = request.query_params.get(self.after_query_param)
        if after is None:
            return super().paginate_queryset(queryset, request, view)
        if self.offset_query_param in request.query_params:
            raise ValidationFailed([FieldError("after", "invalid", "cannot be combined with offset")])
        position = None
        if after:
            position = parse_position(after, queryset.model)
            if position is None:
                raise ValidationFailed(
                    [FieldError("after", "invalid", "is not a position from a page's next link")]
                )
        self.request = request
        self.limit = self.get_limit(request)
        self.keyset = keyset_page(queryset, after=position, size=self.limit)
        return self.keyset.object_list

    def get_paginated_response(self, data: Any) -> Response:
        if self.keyset is None:
            return super().get_paginated_response(data)
        following = None
        if self.keyset.next_position is not None:
            assert self.request is not None
            url = self.request.build_absolute_uri()
            following = replace_query_param(url, self.after_query_param, self.keyset.next_position)
        return Response({"count": None, "next": following, "previous": None, "results": data})

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
