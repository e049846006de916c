"""Company payment settings: underpayment limits and the default redirect URL (docs/decisions.md)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.validation import validated
from core.assets import all_assets
from core.money import number_text
from invoices.api.schema_types import UnderpaymentLimitsPatchSchema, UnderpaymentLimitsSchema
from invoices.api.serializers import RedirectUrlField
from invoices.limits import underpayment_limits_set
from invoices.models import UnderpaymentLimit
from invoices.rules import underpayment_limits_check
from payments.auth import current_company
from payments.models import Company
from payments.services import company_set_redirect_url


def limits_body(company: Company) -> dict[str, Any]:
    saved = {limit.code: limit for limit in UnderpaymentLimit.objects.filter(company=company)}
    body = {}
    for asset in all_assets():
        limit = saved.get(asset.code)
        body[asset.code] = {
            "static": number_text(limit.static) if limit else "0",
            "percentage": limit.percentage.normalize() if limit else Decimal(0),
        }
    return {"assets": body}


class UnderpaymentLimitsApi(APIView):
    required_scopes = {"GET": "settings:read", "PATCH": "settings:write"}

    @extend_schema(responses={200: UnderpaymentLimitsSchema})
    def get(self, request: Request) -> Response:
        return Response(limits_body(current_company(request)))

    @extend_schema(request=UnderpaymentLimitsPatchSchema, responses={200: UnderpaymentLimitsSchema})
    def patch(self, request: Request) -> Response:
        company = current_company(request)
        assets = request.data.get("assets") if isinstance(request.data, dict) else None
        changes = underpayment_limits_check(assets)
        underpayment_limits_set(company=company, limits=changes)
        return Response(limits_body(company))


class RedirectUrlInputSerializer(serializers.Serializer):
    redirectURL = RedirectUrlField(url=True, allow_null=True, allow_blank=True, max_length=2048)


@extend_schema_serializer(component_name="RedirectUrl")
class RedirectUrlOutputSerializer(serializers.Serializer):
    """The accepted value as it was sent: null stays null, "" stays "" (both clear the URL)."""

    redirectURL = serializers.CharField(allow_null=True, allow_blank=True)


class CompanyRedirectUrlApi(APIView):
    required_scopes = {"PUT": "settings:write"}

    @extend_schema(request=RedirectUrlInputSerializer, responses={200: RedirectUrlOutputSerializer})
    def put(self, request: Request) -> Response:
        data = validated(RedirectUrlInputSerializer, request.data)
        company = current_company(request)
        company_set_redirect_url(company_id=company.pk, url=data["redirectURL"] or "")
        body = cast(dict[str, Any], request.data)  # a mapping: validated above
        return Response({"redirectURL": body["redirectURL"]})
