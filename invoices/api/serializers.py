from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

from chains.backend import get_backend
from core.assets import BASE_ASSETS, get_asset, price_decimals
from core.errors import ValidationFailed, as_drf_error
from core.money import MAX_INTEGER_DIGITS, format_amount, number_text
from core.wire import iso_utc
from invoices.models import Invoice
from invoices.rules import (
    ITEM_NAME_MAX_LENGTH,
    PRICE_MAX_DECIMALS,
    PRICE_MAX_DIGITS,
    allowed_bases,
    invoice_currency_check,
    item_price_check,
    pays_on_sandbox,
)
from invoices.selectors import invoice_deposits
from payments.api.fields import CodeField, NonEmptyListSerializer, StrictCharField
from payments.api.schema_fields import decimal_pattern, money_schema
from payments.services import redirect_url_check

View = Literal["create", "fill", "read"]


class PriceField(serializers.DecimalField):
    """An item price by invoices.rules.item_price_check (the create form applies the same rule)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_digits=PRICE_MAX_DIGITS, decimal_places=PRICE_MAX_DECIMALS, **kwargs)

    def to_internal_value(self, data: Any) -> Decimal:
        try:
            return item_price_check(data)
        except ValidationFailed as exc:
            raise as_drf_error(exc) from exc


class ItemInputSerializer(serializers.Serializer):
    name = StrictCharField(max_length=ITEM_NAME_MAX_LENGTH, allow_blank=True, trim_whitespace=False)
    price = PriceField()

    class Meta:
        list_serializer_class = NonEmptyListSerializer


class CurrencyField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        try:
            return invoice_currency_check(super().to_internal_value(data))
        except ValidationFailed as exc:
            raise as_drf_error(exc) from exc


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.", code="invalid")
        return data


class RedirectUrlField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        try:
            return redirect_url_check(super().to_internal_value(data))
        except ValidationFailed as exc:
            raise as_drf_error(exc) from exc


class InvoiceCreateInputSerializer(serializers.Serializer):
    invoiceCurrency = CurrencyField(codes="currency")
    items = ItemInputSerializer(many=True, allow_empty=False)
    isMerchantPaysFee = StrictBooleanField(required=False, default=False)
    paymentCurrency = CodeField(required=False, allow_null=True, max_length=16)
    redirectURL = RedirectUrlField(
        url=True, required=False, allow_null=True, allow_blank=True, max_length=2048
    )


class InvoiceProceedInputSerializer(serializers.Serializer):
    clientEmail = serializers.EmailField(max_length=254)
    paymentCurrency = StrictCharField(codes="offered", required=False, allow_null=True, max_length=16)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and "clientEmail" in data and not isinstance(data["clientEmail"], str):
            raise serializers.ValidationError({"clientEmail": ["Must be a string."]}, code="invalid")
        return super().to_internal_value(data)


class InvoiceListFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Invoice.Status.choices, required=False)


def _redirect(invoice: Invoice) -> str | None:
    return invoice.redirect_url or invoice.company.redirect_url or None


def _transactions(invoice: Invoice) -> list[dict[str, Any]]:
    deposits = invoice_deposits(invoice)
    if not deposits:
        return []
    backend = get_backend(invoice.payment_code)
    return [
        {
            "id": str(deposit.pk),
            "amount": number_text(deposit.amount),
            "from": deposit.code,
            "txHash": backend.explorer_url(deposit.code, deposit.txid),
            "companyId": str(invoice.company_id),
            "invoiceId": str(invoice.pk),
            "addressId": str(invoice.deposit_address_id),
            "createdAt": iso_utc(deposit.seen_at),
            # Additive (docs/decisions.md): where the transaction stands.
            "status": deposit.status,
            "confirmations": deposit.confirmations,
            "isLate": deposit.is_late,
        }
        for deposit in deposits
    ]


def invoice_representation(invoice: Invoice, *, view: View) -> dict[str, Any]:
    """docs/api.md, field order and presence exactly as documented for each response; last, additively,
    `sandbox`: paid with simulated money, by the rule the invoice's webhooks follow (pays_on_sandbox)."""
    body = _documented(invoice, view=view)
    body["sandbox"] = pays_on_sandbox(invoice)
    return body


def _documented(invoice: Invoice, *, view: View) -> dict[str, Any]:
    company = invoice.company
    # Allowed by the merchant and offered by this deployment (a code with no backend cannot be paid).
    allowed = allowed_bases(company)
    decimals = price_decimals(invoice.invoice_currency)
    content: dict[str, Any] = {
        "invoiceCurrency": invoice.invoice_currency,
        "items": [
            {"name": item.name, "price": format_amount(item.price, decimals=decimals)}
            for item in invoice.items.all()
        ],
        "paymentCurrency": invoice.payment_code or invoice.fixed_payment_code or None,
        "isMerchantPaysFee": invoice.is_merchant_pays_fee,
    }
    if view == "create":
        content["redirectURL"] = _redirect(invoice)
    body: dict[str, Any] = {
        "id": str(invoice.pk),
        "status": invoice.status,
        "createdAt": iso_utc(invoice.created_at),
        "company": {
            "name": company.name,
            "logoUrl": company.logo_url,
            "assets": [{"asset": base, "isAllowed": base in allowed} for base in BASE_ASSETS],
        },
        "invoiceContent": content,
    }
    if view == "create":
        return body
    body["redirectURL"] = _redirect(invoice)
    if invoice.filled_at is None:
        return body
    asset = get_asset(invoice.payment_code)
    assert invoice.deposit_address is not None and invoice.amount_due is not None and invoice.fee is not None
    body["clientEmail"] = invoice.client_email
    body["address"] = {
        "id": str(invoice.deposit_address_id),
        "address": invoice.deposit_address.address,
        "tag": invoice.deposit_address.tag or None,
        "asset": asset.code,
    }
    body["paymentDetails"] = {
        "rate": number_text(invoice.rate or Decimal(0)),
        "invoiceFee": format_amount(invoice.fee, decimals=asset.display_decimals),
        "amount": format_amount(invoice.amount_due, decimals=asset.display_decimals),
        "paidAmount": number_text(invoice.paid_amount),
        "isOverpaid": invoice.is_overpaid,
    }
    transactions = _transactions(invoice)
    if transactions:
        body["invoiceTransactions"] = transactions
    body["expiredAt"] = iso_utc(invoice.expired_at) if invoice.expired_at else None
    return body


# The document's price: the decimals the server reads (registered on import, as every field extension).
class PriceFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "invoices.api.serializers.PriceField"

    def map_serializer_field(self, auto_schema, direction):  # type: ignore[no-untyped-def]
        pattern = decimal_pattern(whole=MAX_INTEGER_DIGITS, places=PRICE_MAX_DECIMALS, signed=True)
        return money_schema(pattern, "A decimal string, any sign; the items' total must be above 0.")
