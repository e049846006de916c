"""Schema-only serializers: the exact shapes of responses the views build as dicts, so the OpenAPI
document types every body (a client generator or schemathesis can chain create -> read). Never used to
validate or render; `tests/test_openapi.py` checks real responses against them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.assets import BASE_ASSETS, INVOICE_CURRENCIES, all_assets
from payments.models import Deposit, SandboxTransaction

PAYMENT_CODES = [asset.code for asset in all_assets()]
BASE_ASSET_CHOICES = list(BASE_ASSETS)
INVOICE_CURRENCY_CHOICES = list(INVOICE_CURRENCIES)


def money_string(**kwargs: object) -> serializers.CharField:
    """Money as a JSON string of plain decimal notation ("0.015")."""
    kwargs.setdefault("help_text", 'Decimal amount as a string, e.g. "0.015".')
    return serializers.CharField(**kwargs)  # type: ignore[arg-type]


class PaymentCodeField(serializers.ChoiceField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(choices=PAYMENT_CODES, **kwargs)  # type: ignore[arg-type]


class BaseAssetField(serializers.ChoiceField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(choices=BASE_ASSET_CHOICES, **kwargs)  # type: ignore[arg-type]


class InvoiceCurrencyField(serializers.ChoiceField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(choices=INVOICE_CURRENCY_CHOICES, **kwargs)  # type: ignore[arg-type]


SANDBOX_HELP = (
    "true: the payment code runs on the sandbox chain, simulated money (never ship on it); false: a real "
    "chain. Webhooks about it carry the same marker."
)


@extend_schema_serializer(component_name="StaticDeposit")
class StaticDepositSchema(serializers.Serializer):
    id = serializers.UUIDField()
    internal_user_id = serializers.CharField()
    email = serializers.EmailField(allow_null=True)
    asset = BaseAssetField()
    network = PaymentCodeField()
    address = serializers.CharField()
    tag = serializers.CharField(required=False, help_text="TON only: the memo the sender must include.")
    createdAt = serializers.DateTimeField()
    sandbox = serializers.BooleanField(help_text=SANDBOX_HELP)


@extend_schema_serializer(component_name="SandboxTransaction")
class SandboxTransactionSchema(serializers.Serializer):
    txid = serializers.CharField()
    txHash = serializers.CharField(help_text="Explorer link of the transaction.")
    asset = PaymentCodeField()
    address = serializers.CharField()
    tag = serializers.CharField(allow_null=True)
    amount = money_string()
    outcome = serializers.ChoiceField(choices=SandboxTransaction.Outcome.choices)
    confirmations = serializers.IntegerField(min_value=0)
    status = serializers.ChoiceField(choices=Deposit.Status.choices, allow_null=True)
    routed = serializers.BooleanField()


@extend_schema_serializer(component_name="SandboxBlocks")
class SandboxBlocksSchema(serializers.Serializer):
    mined = serializers.IntegerField(min_value=1)
    tips = serializers.DictField(
        child=serializers.IntegerField(min_value=0), help_text="Tip per payment code."
    )
