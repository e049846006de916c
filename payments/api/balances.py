"""GET /api/company/balances (docs/decisions.md): the merchant's balance in every payment code."""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.money import number_text
from payments.api.schema_types import BaseAssetField, PaymentCodeField
from payments.auth import current_company
from payments.selectors import balance_list_for_company


class AmountTextField(serializers.CharField):
    """Money as a JSON string without exponent or trailing zeros ("0", "0.015"), docs/decisions.md."""

    def to_representation(self, value: Decimal) -> str:  # type: ignore[override]
        return number_text(value)


@extend_schema_serializer(component_name="Balance")
class BalanceOutputSerializer(serializers.Serializer):
    asset = PaymentCodeField(source="code", help_text="Payment code (asset + network), e.g. trc20usdt.")
    currency = BaseAssetField(source="base", help_text="Base asset of the code, e.g. usdt.")
    available = AmountTextField(help_text="Spendable now.")
    held = AmountTextField(help_text="Reserved by withdrawals in flight.")


@extend_schema_serializer(component_name="Balances")
class BalanceListOutputSerializer(serializers.Serializer):
    balances = BalanceOutputSerializer(many=True)


class CompanyBalanceListApi(APIView):
    required_scopes = {"GET": "balances:read"}

    @extend_schema(
        responses={200: BalanceListOutputSerializer},
        summary="Balances: available and held, one entry per payment code",
    )
    def get(self, request: Request) -> Response:
        rows = balance_list_for_company(company=current_company(request))
        return Response(BalanceListOutputSerializer({"balances": rows}).data)
