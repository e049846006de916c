from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from core import jsonutil
from core.wire import TimestampField
from webhooks.families import payload_statuses
from webhooks.models import WebhookAttempt, WebhookEvent

# Every `status` a webhook body can carry, of any family (the payload builders refuse any other), as the apps
# that build them registered when they started (webhooks.families): this module is imported after.
PAYLOAD_STATUSES = payload_statuses()


class WebhookEventFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=WebhookEvent.Status.choices, required=False)
    family = serializers.ChoiceField(choices=WebhookEvent.Family.choices, required=False)


@extend_schema_serializer(component_name="WebhookAttempt")
class WebhookAttemptOutputSerializer(serializers.ModelSerializer):
    startedAt = TimestampField(source="started_at")
    durationMs = serializers.IntegerField(source="duration_ms")
    statusCode = serializers.IntegerField(source="status_code", allow_null=True)
    response = serializers.CharField(source="response_excerpt")
    requestHeaders = serializers.DictField(
        source="request_headers", child=serializers.CharField(), help_text="The headers sent, by name."
    )

    class Meta:
        model = WebhookAttempt
        fields = [
            "number",
            "startedAt",
            "durationMs",
            "url",
            "statusCode",
            "succeeded",
            "error",
            "response",
            "requestHeaders",
        ]


@extend_schema_serializer(component_name="WebhookEvent")
class WebhookEventOutputSerializer(serializers.ModelSerializer):
    objectId = serializers.CharField(source="object_id")
    eventStatus = serializers.ChoiceField(
        source="event_status", choices=PAYLOAD_STATUSES, help_text="The `status` inside the payload."
    )
    attempts = serializers.IntegerField(source="attempts_total")
    nextAttemptAt = TimestampField(source="next_attempt_at", allow_null=True)
    deliveredAt = TimestampField(source="delivered_at", allow_null=True)
    createdAt = TimestampField(source="created_at")
    payload = serializers.SerializerMethodField()

    class Meta:
        model = WebhookEvent
        fields = [
            "id",
            "family",
            "objectId",
            "eventStatus",
            "status",
            "attempts",
            "nextAttemptAt",
            "deliveredAt",
            "createdAt",
            "payload",
        ]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_payload(self, event: WebhookEvent) -> Any:
        # Parsed with Decimals, so numbers come back out exactly as they were sent.
        return jsonutil.loads(event.body)


@extend_schema_serializer(component_name="WebhookEventDetail")
class WebhookEventDetailOutputSerializer(WebhookEventOutputSerializer):
    body = serializers.CharField()
    attemptLog = WebhookAttemptOutputSerializer(source="attempts", many=True)

    class Meta(WebhookEventOutputSerializer.Meta):
        fields = [*WebhookEventOutputSerializer.Meta.fields, "body", "attemptLog"]
