from __future__ import annotations

from typing import Any, cast

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.validation import validated
from payments.api.serializers import WebhookUrlInputSerializer, WebhookUrlOutputSerializer
from payments.auth import current_company
from payments.services import company_set_webhook_url


class CompanyWebhookUrlApi(APIView):
    required_scopes = {"PUT": "settings:write"}

    @extend_schema(
        request=WebhookUrlInputSerializer,
        responses={200: WebhookUrlOutputSerializer},
        summary="Set the webhook URL (null or empty string clears it)",
    )
    def put(self, request: Request) -> Response:
        data = validated(WebhookUrlInputSerializer, request.data)
        company_set_webhook_url(company_id=current_company(request).pk, url=data["webHookUrl"])
        # docs/decisions.md: the response repeats the body that was accepted (null stays null, "" stays "").
        body = cast(dict[str, Any], request.data)  # a mapping: validated above
        return Response({"webHookUrl": body["webHookUrl"]})
