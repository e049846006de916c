from __future__ import annotations

import uuid

from django.db import models

from core.fields import MoneyField, money_check
from payments.models import Company, DepositAddress


class InvoiceStatus(models.TextChoices):
    CREATED = "created"
    PENDING = "pending"
    PROCESSING = "processing"
    DONE = "done"
    WRONG = "wrong"
    REFUNDED = "refunded"
    CLOSED = "closed"


class Invoice(models.Model):
    """A regular invoice (docs/api.md). Status changes only through invoices.services, one function each."""

    Status = InvoiceStatus

    FINAL = (Status.DONE, Status.REFUNDED, Status.CLOSED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)  # unguessable: GET is public
    # No index of its own: invoice_company_idx (company, -created_at) serves every lookup by company.
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="invoices", db_index=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATED)
    invoice_currency = models.CharField(max_length=16)
    total = MoneyField()  # sum of the rounded item prices, in invoice_currency
    is_merchant_pays_fee = models.BooleanField(default=False)
    fixed_payment_code = models.CharField(max_length=16, blank=True)  # set by the merchant at creation
    redirect_url = models.CharField(max_length=2048, blank=True)  # "" = the company default
    # Filled at proceed (all empty/NULL while created).
    client_email = models.EmailField(blank=True)
    payment_code = models.CharField(max_length=16, blank=True)
    deposit_address = models.OneToOneField(
        DepositAddress, null=True, on_delete=models.PROTECT, related_name="invoice"
    )
    rate = MoneyField(null=True)  # invoice_currency -> payment asset, locked at proceed
    fee = MoneyField(null=True)  # in the payment asset
    amount_due = MoneyField(null=True)  # what the client sends, rounded up
    paid_amount = MoneyField(default=0)  # confirmed, not late
    credited_amount = MoneyField(default=0)  # what the merchant's ledger got for it
    filled_at = models.DateTimeField(null=True)
    expired_at = models.DateTimeField(null=True)
    refund_address = models.CharField(max_length=128, blank=True)
    refund_tag = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=[status.value for status in InvoiceStatus]),
                name="invoice_status_valid",
            ),
            models.CheckConstraint(
                condition=money_check("total", strictly_positive=True), name="invoice_total_positive"
            ),
            models.CheckConstraint(condition=money_check("paid_amount"), name="invoice_paid_not_negative"),
        ]
        indexes = [
            models.Index(fields=["status", "expired_at"], name="invoice_expiry_idx"),
            models.Index(fields=["company", "-created_at"], name="invoice_company_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.pk} ({self.status})"

    @property
    def is_overpaid(self) -> bool:
        return self.amount_due is not None and self.paid_amount > self.amount_due


class InvoiceItem(models.Model):
    # No index of its own: the unique invoice_item_position (invoice, position) serves it.
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="items", db_index=False)
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=500)
    price = MoneyField()  # rounded (ROUND_HALF_UP) to the currency's decimals; may be <= 0

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["invoice", "position"], name="invoice_item_position")]

    def __str__(self) -> str:
        return f"{self.name}: {self.price}"


class UnderpaymentLimit(models.Model):
    """How far below the amount due a payment may fall and still complete the invoice (docs/decisions.md)."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="underpayment_limits")
    code = models.CharField(max_length=16)
    static = MoneyField(default=0)
    percentage = models.DecimalField(max_digits=5, decimal_places=2, default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["company", "code"], name="underpayment_limit_unique"),
            models.CheckConstraint(condition=money_check("static"), name="underpayment_static_not_negative"),
            models.CheckConstraint(
                condition=models.Q(percentage__gte=0, percentage__lte=100),
                name="underpayment_percentage_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code}: {self.static} / {self.percentage}%"
