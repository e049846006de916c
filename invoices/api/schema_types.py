"""Schema-only serializers of the invoice responses, field for field as `invoice_representation` builds
them; `tests/test_openapi.py` checks real responses against them. Each is named in the document
after what it describes (`Invoice`, not `InvoiceSchema`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from invoices.models import Invoice
from payments.api.fields import CodeKeyedField, ThresholdField
from payments.api.schema_types import (
    SANDBOX_HELP,
    BaseAssetField,
    InvoiceCurrencyField,
    PaymentCodeField,
    money_string,
)
from payments.models import Deposit


@extend_schema_serializer(component_name="InvoiceItem")
class _Item(serializers.Serializer):
    name = serializers.CharField()
    price = money_string()


@extend_schema_serializer(component_name="InvoiceCompanyAsset")
class _CompanyAsset(serializers.Serializer):
    asset = BaseAssetField()
    isAllowed = serializers.BooleanField()


@extend_schema_serializer(component_name="InvoiceCompany")
class _Company(serializers.Serializer):
    name = serializers.CharField()
    logoUrl = serializers.CharField(allow_blank=True)
    assets = _CompanyAsset(many=True)


@extend_schema_serializer(component_name="InvoiceContent")
class _Content(serializers.Serializer):
    invoiceCurrency = InvoiceCurrencyField()
    items = _Item(many=True)
    paymentCurrency = PaymentCodeField(allow_null=True)
    isMerchantPaysFee = serializers.BooleanField()


@extend_schema_serializer(component_name="InvoiceCreatedContent")
class _CreatedContent(_Content):
    redirectURL = serializers.CharField(allow_null=True)


@extend_schema_serializer(component_name="InvoiceAddress")
class _Address(serializers.Serializer):
    id = serializers.UUIDField()
    address = serializers.CharField()
    tag = serializers.CharField(allow_null=True)
    asset = PaymentCodeField()


@extend_schema_serializer(component_name="InvoicePaymentDetails")
class _PaymentDetails(serializers.Serializer):
    rate = money_string()
    invoiceFee = money_string()
    amount = money_string(help_text="What the client must send.")
    paidAmount = money_string(help_text="The confirmed sum received so far.")
    isOverpaid = serializers.BooleanField()


@extend_schema_serializer(component_name="InvoiceTransaction")
class _Transaction(serializers.Serializer):
    id = serializers.CharField(help_text='The transfer\'s number in Kassa, a decimal string such as "1".')
    amount = money_string()
    # `from` is a Python keyword: declared below.
    txHash = serializers.CharField()
    companyId = serializers.UUIDField()
    invoiceId = serializers.UUIDField()
    addressId = serializers.UUIDField()
    createdAt = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=Deposit.Status.choices)
    confirmations = serializers.IntegerField(min_value=0)
    isLate = serializers.BooleanField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        return {"id": fields["id"], "amount": fields["amount"], "from": PaymentCodeField(), **fields}


class _InvoiceBase(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=Invoice.Status.choices)
    createdAt = serializers.DateTimeField()
    company = _Company()


@extend_schema_serializer(component_name="InvoiceCreated")
class InvoiceCreatedSchema(_InvoiceBase):
    """The 201 of `POST /api/invoices/v1/regular`."""

    invoiceContent = _CreatedContent()
    sandbox = serializers.BooleanField(help_text=SANDBOX_HELP)


@extend_schema_serializer(component_name="Invoice")
class InvoiceSchema(_InvoiceBase):
    """An invoice as read; the client's fields appear once it is filled."""

    invoiceContent = _Content()
    redirectURL = serializers.CharField(allow_null=True)
    clientEmail = serializers.EmailField(required=False)
    address = _Address(required=False)
    paymentDetails = _PaymentDetails(required=False)
    invoiceTransactions = _Transaction(many=True, required=False)
    expiredAt = serializers.DateTimeField(required=False, allow_null=True)
    sandbox = serializers.BooleanField(help_text=SANDBOX_HELP)


@extend_schema_serializer(component_name="UnderpaymentLimit")
class _Limit(serializers.Serializer):
    static = money_string()
    percentage = serializers.DecimalField(max_digits=5, decimal_places=2, coerce_to_string=False)


@extend_schema_serializer(component_name="UnderpaymentLimits")
class UnderpaymentLimitsSchema(serializers.Serializer):
    """One entry per payment code."""

    assets = serializers.DictField(child=_Limit())


@extend_schema_field(
    {
        "type": "string",
        "pattern": r"^0*(?:100(?:\.0+)?|[0-9]{1,2}(?:\.[0-9]{1,2}0*)?)$",
        "description": "0 to 100, at most 2 decimals, as a decimal string.",
    }
)
class _PercentageInput(serializers.CharField):
    pass


@extend_schema_serializer(component_name="UnderpaymentLimitInput")
class _LimitInput(serializers.Serializer):
    static = ThresholdField()
    percentage = _PercentageInput()


@extend_schema_serializer(component_name="UnderpaymentLimitsPatch")
class UnderpaymentLimitsPatchSchema(serializers.Serializer):
    assets = CodeKeyedField(
        child=_LimitInput(), help_text="Payment code -> limits; numbers or numeric strings. All or nothing."
    )
