"""Request shapes and response bodies. Shapes only: the business rules live in withdrawals.rules."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from core.assets import Asset
from core.offer import is_sandbox
from core.wire import TimestampField
from payments.api.balances import AmountTextField
from payments.api.fields import AmountField, CodeField, CodeKeyedField, StrictCharField, ThresholdField
from payments.api.schema_types import SANDBOX_HELP, PaymentCodeField
from payments.models import MONEY
from withdrawals.models import AutoWithdrawalRule, Withdrawal
from withdrawals.policy import APPROVAL, NEW_ADDRESS, hold_body
from withdrawals.services import explorer_link

ASSET_MAX_LENGTH = TAG_MAX_LENGTH = 64


class StrictBooleanField(serializers.BooleanField):
    """true or false as JSON booleans; "true", 1 and friends are a 400."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.", code="invalid")
        return data


class WithdrawalItemInputSerializer(serializers.Serializer):
    """docs/api.md. `asset`, `to` and `tag` are checked against the asset by the service (rules.py)."""

    amount = AmountField(help_text="Net amount the receiver gets; the network fee is added on top.")
    tag = StrictCharField(
        required=False, allow_blank=True, allow_null=True, max_length=TAG_MAX_LENGTH, trim_whitespace=False
    )
    to = StrictCharField(allow_blank=True, trim_whitespace=False, help_text="Receiver address.")
    asset = StrictCharField(
        codes="offered",
        max_length=ASSET_MAX_LENGTH,
        help_text="Payment code (asset + network), e.g. trc20usdt.",
    )


class WithdrawalItemsField(serializers.ListField):
    child = WithdrawalItemInputSerializer()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_empty=False, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        # Before the items are validated one by one: a 100,000-item body is refused at once.
        limit = settings.WITHDRAWAL_MAX_ITEMS
        if isinstance(data, list) and len(data) > limit:
            raise serializers.ValidationError(
                f"At most {limit} items per call, got {len(data)}.", code="too_many_items"
            )
        return super().to_internal_value(data)


class WithdrawInputSerializer(serializers.Serializer):
    items = WithdrawalItemsField()


class WithdrawalResultSerializer(serializers.Serializer):
    """One entry per request item, in request order; all are accepted or the call is a 400."""

    # For the schema only: services.withdrawal_results builds the entries.

    message = serializers.CharField()
    success = serializers.BooleanField()
    uid = serializers.CharField(help_text="The new withdrawal: GET /api/transactions/withdrawals/{uid}.")


@extend_schema_serializer(component_name="WithdrawalHold")
class WithdrawalHoldSerializer(serializers.Serializer):
    """For the schema only: withdrawals.policy.hold_body builds it."""

    reasons = serializers.ListField(
        child=serializers.ChoiceField(choices=[NEW_ADDRESS, APPROVAL]),
        help_text="What it still waits for: `new_address` (the cool-down of an address never paid before), "
        "`approval` (above the approval threshold, approved on the dashboard).",
    )
    until = TimestampField(
        allow_null=True, help_text="When the new-address cool-down ends; null without one."
    )


@extend_schema_serializer(component_name="Withdrawal")
class WithdrawalOutputSerializer(serializers.Serializer):
    uid = serializers.CharField()
    status = serializers.ChoiceField(choices=Withdrawal.Status.choices)
    asset = PaymentCodeField(source="code", help_text="Payment code (asset + network).")
    amount = AmountTextField(help_text="Net amount sent.")
    fee = AmountTextField(help_text="Network fee charged on top.")
    to = serializers.CharField(source="to_address")
    tag = serializers.SerializerMethodField()
    txHash = serializers.SerializerMethodField(help_text="Explorer link of the transaction, once broadcast.")
    isAutomatic = serializers.BooleanField(source="is_automatic")
    waitingReason = serializers.SerializerMethodField(
        help_text="Why a processing withdrawal is waiting (the payout wallet is being funded...); or null."
    )
    hold = serializers.SerializerMethodField(
        help_text="What of the payout policy holds a processing withdrawal before it is sent; null: nothing."
    )
    createdAt = TimestampField(source="created_at")
    updatedAt = TimestampField(source="updated_at")
    sandbox = serializers.SerializerMethodField()

    @extend_schema_field(serializers.BooleanField(help_text=SANDBOX_HELP))
    def get_sandbox(self, withdrawal: Withdrawal) -> bool:
        return is_sandbox(withdrawal.code)  # as its webhooks say (services._body)

    @extend_schema_field(WithdrawalHoldSerializer(allow_null=True))
    def get_hold(self, withdrawal: Withdrawal) -> dict[str, Any] | None:
        return hold_body(withdrawal)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_waitingReason(self, withdrawal: Withdrawal) -> str | None:
        waiting = withdrawal.status == Withdrawal.Status.PROCESSING and withdrawal.blocked_reason
        return withdrawal.blocked_reason if waiting else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_tag(self, withdrawal: Withdrawal) -> str | None:
        return withdrawal.tag or None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_txHash(self, withdrawal: Withdrawal) -> str | None:
        return explorer_link(withdrawal)


class WithdrawalListFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Withdrawal.Status.choices, required=False)
    asset = CodeField(required=False, max_length=64)
    isAutomatic = serializers.ChoiceField(choices=["true", "false"], required=False)


# --- auto-withdrawals -------------------------------------------------------------------------------------


class AutoWithdrawalRuleInputSerializer(serializers.Serializer):
    """docs/api.md: one value of `assets`."""

    amount = ThresholdField()
    isEnabled = StrictBooleanField()
    withdrawalTag = StrictCharField(
        required=False, allow_null=True, allow_blank=True, max_length=64, trim_whitespace=False
    )
    withdrawalAddress = StrictCharField(allow_blank=True, trim_whitespace=False)


@extend_schema_serializer(component_name="AutoWithdrawalsPatch")
class AutoWithdrawalsPatchSchema(serializers.Serializer):
    """For the schema only: the view checks each value with AutoWithdrawalRuleInputSerializer."""

    assets = CodeKeyedField(
        child=AutoWithdrawalRuleInputSerializer(), help_text="Payment code -> its rule. All or nothing."
    )


@extend_schema_serializer(component_name="AutoWithdrawal")
class AutoWithdrawalOutputSerializer(serializers.Serializer):
    """The auto-withdrawal setting of one payment code; `amount` is a JSON number."""

    # For the schema only: auto_withdrawal_entry builds the entries.

    assetId = PaymentCodeField()
    amount = serializers.DecimalField(**MONEY, coerce_to_string=False)
    isEnabled = serializers.BooleanField()
    withdrawalTag = serializers.CharField(allow_null=True)
    withdrawalAddress = serializers.CharField()


@extend_schema_serializer(component_name="AutoWithdrawals")
class AutoWithdrawalListOutputSerializer(serializers.Serializer):
    autoWithdrawals = AutoWithdrawalOutputSerializer(many=True)


def auto_withdrawal_entry(asset: Asset, rule: AutoWithdrawalRule | None) -> dict[str, Any]:
    """`amount` stays a Decimal: the renderer writes it as a raw JSON number (docs/decisions.md)."""
    if rule is None:
        return {
            "assetId": asset.code,
            "amount": Decimal(0),
            "isEnabled": False,
            "withdrawalTag": None,
            "withdrawalAddress": "",
        }
    return {
        "assetId": asset.code,
        "amount": rule.amount,
        "isEnabled": rule.is_enabled,
        "withdrawalTag": rule.tag or None,
        "withdrawalAddress": rule.address,
    }


class WithdrawalItemsScheme(OpenApiSerializerFieldExtension):
    """1 to WITHDRAWAL_MAX_ITEMS items, read when the document is built (the setting may change)."""

    target_class = "withdrawals.api.serializers.WithdrawalItemsField"

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        return {**schema, "minItems": 1, "maxItems": settings.WITHDRAWAL_MAX_ITEMS}
