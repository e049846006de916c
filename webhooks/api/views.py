from __future__ import annotations

from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.pagination import PAGE_PARAMETERS, KassaPagination, page_serializer
from core.api.validation import validated
from payments.auth import current_company
from payments.schema import problem
from webhooks import selectors, services
from webhooks.api.serializers import (
    WebhookEventDetailOutputSerializer,
    WebhookEventFilterSerializer,
    WebhookEventOutputSerializer,
)


class WebhookEventListApi(APIView):
    required_scopes = {"GET": "webhooks:read"}

    @extend_schema(
        operation_id="webhooks_events_list",
        parameters=[WebhookEventFilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_serializer("WebhookEventPage", WebhookEventOutputSerializer)},
    )
    def get(self, request: Request) -> Response:
        filters = validated(WebhookEventFilterSerializer, request.query_params)
        events = selectors.webhook_list_events(company=current_company(request), **filters)
        paginator = KassaPagination()
        page = paginator.paginate_queryset(events, request, view=self)
        return paginator.get_paginated_response(WebhookEventOutputSerializer(page, many=True).data)


class WebhookEventDetailApi(APIView):
    required_scopes = {"GET": "webhooks:read"}

    @extend_schema(responses={200: WebhookEventDetailOutputSerializer})
    def get(self, request: Request, event_id: UUID) -> Response:
        event = selectors.webhook_get_event(company=current_company(request), event_id=event_id)
        return Response(WebhookEventDetailOutputSerializer(event).data)


class WebhookEventRedeliverApi(APIView):
    required_scopes = {"POST": "webhooks:write"}

    @extend_schema(
        request=None,
        responses={
            202: WebhookEventOutputSerializer,
            409: problem(
                "No webhook URL is set, or the event is being delivered right now (`invalid_state`)."
            ),
        },
    )
    def post(self, request: Request, event_id: UUID) -> Response:
        company = current_company(request)
        services.webhook_redeliver(company=company, event_id=event_id)
        event = selectors.webhook_get_event(company=company, event_id=event_id)
        return Response(WebhookEventOutputSerializer(event).data, status=202)
