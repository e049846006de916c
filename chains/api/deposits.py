"""Static deposit addresses (docs/decisions.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chains.static_deposits import static_address_get_or_create
from core.api.validation import validated
from core.assets import get_asset
from core.offer import is_sandbox
from core.wire import TimestampField
from payments.api.fields import CodeField, StrictCharField
from payments.api.schema_types import StaticDepositSchema
from payments.auth import current_company
from payments.models import StaticDepositAddress
from payments.schema import problem


class StaticDepositInputSerializer(serializers.Serializer):
    internal_user_id = StrictCharField(max_length=128)
    email = serializers.EmailField(required=False, allow_blank=True, allow_null=True, max_length=254)
    asset = StrictCharField(codes="base", max_length=16)
    network = CodeField(max_length=16)


class StaticDepositOutputSerializer(serializers.Serializer):
    def to_representation(self, static: StaticDepositAddress) -> dict[str, Any]:
        asset = get_asset(static.code)
        body: dict[str, Any] = {
            "id": str(static.pk),
            "internal_user_id": static.internal_user_id,
            "email": static.email or None,
            "asset": asset.base,
            "network": asset.code,
            "address": static.deposit_address.address,
        }
        if asset.tag_required:
            body["tag"] = static.deposit_address.tag  # TON only: the memo the sender must include
        body["createdAt"] = TimestampField().to_representation(static.created_at)
        body["sandbox"] = is_sandbox(static.code)  # as its deposits' webhooks say (static_deposits)
        return body


class StaticDepositCreateApi(APIView):
    required_scopes = {"POST": "addresses:write"}

    @extend_schema(
        request=StaticDepositInputSerializer,
        responses={
            201: StaticDepositSchema,
            200: StaticDepositSchema,
            503: problem(
                "The node of a real chain is still extending the range of addresses it watches "
                "(`deposit_addresses_unavailable`, see Retry-After); nothing was done."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = validated(StaticDepositInputSerializer, request.data)
        values = data
        static, created = static_address_get_or_create(
            company=current_company(request),
            internal_user_id=values["internal_user_id"],
            email=(values.get("email") or "").strip().lower(),
            asset=values["asset"],
            network=values["network"],
        )
        return Response(StaticDepositOutputSerializer(static).data, status=201 if created else 200)
