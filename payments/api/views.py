from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

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
        data = WebhookUrlInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        company_set_webhook_url(company_id=current_company(request).pk, url=data.validated_data["webHookUrl"])
        # docs/decisions.md: the response repeats the body that was accepted (null stays null, "" stays "").
        return Response({"webHookUrl": data.initial_data["webHookUrl"]})
