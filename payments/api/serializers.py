from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from payments.api.fields import StrictCharField


class WebhookUrlInputSerializer(serializers.Serializer):
    # null or "" clears the URL (docs/decisions.md). The URL itself is checked by the service
    # (company_set_webhook_url: the SSRF guard, which may resolve the host), once.
    webHookUrl = StrictCharField(
        url=True, allow_null=True, allow_blank=True, trim_whitespace=True, max_length=2048
    )

    def to_internal_value(self, data: Any) -> Any:
        # CharField would turn 42 into "42"; a URL must arrive as a string. Non-objects: DRF refuses them.
        value = data.get("webHookUrl") if isinstance(data, dict) else None
        if value is not None and not isinstance(value, str):
            raise serializers.ValidationError({"webHookUrl": ["Must be a string or null."]}, code="invalid")
        return super().to_internal_value(data)


@extend_schema_serializer(component_name="WebhookUrl")
class WebhookUrlOutputSerializer(serializers.Serializer):
    webHookUrl = serializers.CharField(allow_null=True)
