from __future__ import annotations

from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from core.api.pagination import PAGE_PARAMETERS, KassaPagination, page_serializer
from core.api.validation import validated
from core.budgets import budget_take
from invoices import selectors, services
from invoices.api.schema_types import InvoiceCreatedSchema, InvoiceSchema
from invoices.api.serializers import (
    InvoiceCreateInputSerializer,
    InvoiceListFilterSerializer,
    InvoiceProceedInputSerializer,
    invoice_representation,
)
from invoices.services import ItemInput
from payments.api.fields import StrictCharField
from payments.auth import SANDBOX_API_PERMISSIONS, ApiCredential, current_company
from payments.schema import links, problem


class PublicInvoiceThrottle(SimpleRateThrottle):
    """Per client address, a budget counted in the shared cache (Redis in production) across web processes
    (core.budgets). DRF's default keeps every request's time in a
    list it reads and writes back whole, which costs more the higher the rate and loses counts when two
    processes write at once."""

    scope = "invoice_public"

    def get_cache_key(self, request: Request, view: object) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def allow_request(self, request: Request, view: object) -> bool:
        limit, duration = self.parse_rate(self.rate)
        if limit is None or duration is None:
            return True
        key = self.get_cache_key(request, view)
        allowed, self.window_end = budget_take(
            key, limit, duration, now=self.timer(), name=self.scope, store=self.cache
        )
        return allowed

    def wait(self) -> float:
        return max(1.0, self.window_end - self.timer())


class InvoiceCreateApi(APIView):
    required_scopes = {"GET": "invoices:read", "POST": "invoices:write"}

    @extend_schema(
        request=InvoiceCreateInputSerializer,
        responses={201: InvoiceCreatedSchema},
        extensions=links(
            201,
            "invoice_id",
            "$response.body#/id",
            "invoices_v1_regular_retrieve",
            "invoices_v1_regular_proceed_create",
            "invoices_v1_regular_accept_create",
            "invoices_v1_regular_refund_create",
            "sandbox_invoices_expire_create",
        ),
    )
    def post(self, request: Request) -> Response:
        values = validated(InvoiceCreateInputSerializer, request.data)
        invoice = services.invoice_create(
            company=current_company(request),
            invoice_currency=values["invoiceCurrency"],
            items=[ItemInput(name=item["name"], price=item["price"]) for item in values["items"]],
            is_merchant_pays_fee=values["isMerchantPaysFee"],
            payment_currency=values.get("paymentCurrency"),
            redirect_url=values.get("redirectURL"),
        )
        return Response(invoice_representation(invoice, view="create"), status=201)

    @extend_schema(
        operation_id="invoices_v1_regular_list",
        parameters=[InvoiceListFilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_serializer("InvoicePage", InvoiceSchema)},
    )
    def get(self, request: Request) -> Response:
        filters = validated(InvoiceListFilterSerializer, request.query_params)
        invoices = selectors.invoice_list_for_company(company=current_company(request), **filters)
        paginator = KassaPagination()
        page = paginator.paginate_queryset(invoices, request, view=self)
        return paginator.get_paginated_response([invoice_representation(i, view="read") for i in page or []])


class InvoiceDetailApi(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list[type] = []  # public: the unguessable id is the key
    throttle_classes = [PublicInvoiceThrottle]

    @extend_schema(responses={200: InvoiceSchema})
    def get(self, request: Request, invoice_id: UUID) -> Response:
        invoice = selectors.invoice_get_public(invoice_id=invoice_id)
        return Response(invoice_representation(invoice, view="read"))


class InvoiceProceedApi(APIView):
    permission_classes = [AllowAny]  # authentication optional (docs/api.md)
    throttle_classes = [PublicInvoiceThrottle]

    @extend_schema(
        request=InvoiceProceedInputSerializer,
        responses={
            200: InvoiceSchema,
            409: problem("The invoice is no longer `created`: already filled, or closed (`invalid_state`)."),
            503: problem(
                "No exchange rate is available right now (`rate_unavailable`), the node of a real chain is "
                "still extending the range of addresses it watches (`deposit_addresses_unavailable`), or "
                "the database cannot be reached (see Retry-After); nothing was done."
            ),
        },
    )
    def post(self, request: Request, invoice_id: UUID) -> Response:
        data = validated(InvoiceProceedInputSerializer, request.data)
        credential = request.auth
        services.invoice_fill(
            invoice_id=invoice_id,
            client_email=data["clientEmail"],
            payment_currency=data.get("paymentCurrency"),
            company=credential.company if isinstance(credential, ApiCredential) else None,
        )
        invoice = selectors.invoice_get_public(invoice_id=invoice_id)
        return Response(invoice_representation(invoice, view="fill"))


class InvoiceAcceptApi(APIView):
    required_scopes = {"POST": "invoices:write"}

    @extend_schema(
        request=None,
        responses={
            200: InvoiceSchema,
            409: problem(
                "The invoice is not `wrong` (nor already accepted), or a payment to it is still unconfirmed "
                "(`invalid_state`)."
            ),
        },
    )
    def post(self, request: Request, invoice_id: UUID) -> Response:
        company = current_company(request)
        services.invoice_accept(company=company, invoice_id=invoice_id)
        return Response(
            invoice_representation(selectors.invoice_get_public(invoice_id=invoice_id), view="read")
        )


class RefundInputSerializer(serializers.Serializer):
    address = StrictCharField(max_length=128)
    tag = StrictCharField(required=False, allow_blank=True, max_length=64)


class InvoiceRefundApi(APIView):
    required_scopes = {"POST": "withdrawals:write"}  # money leaves: a refund is a withdrawal

    @extend_schema(
        request=RefundInputSerializer,
        responses={
            200: InvoiceSchema,
            409: problem(
                "The invoice is not `wrong` (nor already refunded), a payment to it is still unconfirmed, "
                "or this deployment cannot send refunds (`invalid_state`)."
            ),
        },
    )
    def post(self, request: Request, invoice_id: UUID) -> Response:
        company = current_company(request)
        invoice = selectors.invoice_get_for_company(company=company, invoice_id=invoice_id)
        data = validated(RefundInputSerializer, request.data)
        services.invoice_refund(
            company=company,
            invoice_id=invoice.pk,
            address=data["address"],
            tag=data.get("tag", ""),
        )
        return Response(
            invoice_representation(selectors.invoice_get_public(invoice_id=invoice_id), view="read")
        )


class SandboxInvoiceExpireApi(APIView):
    required_scopes = {"POST": "sandbox"}
    permission_classes = SANDBOX_API_PERMISSIONS

    @extend_schema(
        request=None,
        responses={
            200: InvoiceSchema,
            400: problem("The invoice is not to be paid on the sandbox chain (`unsupported_asset`)."),
            409: problem("Only a pending or processing invoice can be expired (`invalid_state`)."),
        },
    )
    def post(self, request: Request, invoice_id: UUID) -> Response:
        company = current_company(request)
        services.invoice_close(invoice_id=invoice_id, now=True, company=company)
        return Response(
            invoice_representation(selectors.invoice_get_public(invoice_id=invoice_id), view="read")
        )
