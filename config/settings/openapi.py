"""drf-spectacular's settings: the OpenAPI document served at /api/schema/ (docs/api.md)."""

from __future__ import annotations

SPECTACULAR_SETTINGS = {
    "TITLE": "Kassa API",
    "DESCRIPTION": "Self-hosted crypto payment gateway: invoices, withdrawals and signed webhooks.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # The PATCH bodies (auto-withdrawals, underpayment limits) require `assets`: not DRF's partial shape.
    "COMPONENT_SPLIT_PATCH": False,
    # Several resources have a `status` with their own choices: name each enum after its model.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "payments.schema.add_problem_responses",
    ],
    "ENUM_NAME_OVERRIDES": {
        "InvoiceStatusEnum": "invoices.models.Invoice.Status",
        "WebhookEventStatusEnum": "webhooks.models.WebhookEvent.Status",
        "DepositStatusEnum": "payments.models.Deposit.Status",
        "WithdrawalStatusEnum": "withdrawals.models.Withdrawal.Status",
        "WebhookEventFamilyEnum": "webhooks.models.WebhookEvent.Family",
        "WebhookPayloadStatusEnum": "webhooks.api.serializers.PAYLOAD_STATUSES",
        "SandboxOutcomeEnum": "payments.models.SandboxTransaction.Outcome",
        "PaymentCodeEnum": "payments.api.schema_types.PAYMENT_CODES",
        "BaseAssetEnum": "payments.api.schema_types.BASE_ASSET_CHOICES",
        "InvoiceCurrencyEnum": "payments.api.schema_types.INVOICE_CURRENCY_CHOICES",
    },
}
