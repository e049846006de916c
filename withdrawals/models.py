from __future__ import annotations

from decimal import Decimal, localcontext

from django.conf import settings
from django.db import models

from chains.models import ChainTx
from core.fields import MoneyField, money_check
from core.money import MONEY_CONTEXT
from payments.models import Company


class WithdrawalCounter(models.Model):
    """The next withdrawal sequence of a company, handed out under a row lock (uids are never reused)."""

    company = models.OneToOneField(
        Company, primary_key=True, on_delete=models.PROTECT, related_name="withdrawal_counter"
    )
    next_sequence = models.PositiveBigIntegerField(default=1)

    def __str__(self) -> str:
        return f"{self.company_id}: next {self.next_sequence}"


class WithdrawalRequest(models.Model):
    """One accepted bulk call of POST /api/transactions/withdraw (2 to 1000 items)."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="withdrawal_requests")
    item_count = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"request {self.pk} ({self.item_count} items)"


class WithdrawalStatus(models.TextChoices):
    PROCESSING = "processing"  # accepted and held; broadcast or not yet (txid tells)
    DONE = "done"  # confirmed on chain; the hold was posted
    REJECTED = "rejected"  # screened out or failed on chain; the hold was released


class Withdrawal(models.Model):
    Status = WithdrawalStatus
    REFERENCE = "withdrawal:{}"  # the ledger reference of a withdrawal's hold, release and post, by its uid

    # "<company number, 3+ digits>-<sequence>" (docs/decisions.md), also the webhook `uid`. Unique by the
    # constraint `withdrawal_uid_unique` below, not `unique=True`: on PostgreSQL that would add a second
    # (LIKE) index to every insert, and a uid is only ever looked up whole.
    uid = models.CharField(max_length=32)
    # No index of its own: withdrawal_company_idx (company, -created_at) serves every lookup by company.
    # NULL for the house's own payouts: an unrouted deposit sent back (`refund_deposit`), which no merchant's
    # balance ever held, so no ledger entry and no merchant webhook follows it.
    company = models.ForeignKey(
        Company, null=True, on_delete=models.PROTECT, related_name="withdrawals", db_index=False
    )
    # The bulk call it came in; NULL for single, automatic and refund withdrawals. Indexed by
    # `withdrawal_request_idx` below, only where it is set.
    request = models.ForeignKey(
        WithdrawalRequest,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="withdrawals",
        db_index=False,
    )
    code = models.CharField(max_length=16)
    to_address = models.CharField(max_length=128)
    tag = models.CharField(max_length=64, blank=True)  # "" when the chain has no tags
    amount = MoneyField()  # net: what the receiver gets
    fee = MoneyField()  # the network fee at acceptance, held and charged on top
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROCESSING)
    txid = models.CharField(max_length=128, blank=True)  # "" until broadcast
    is_automatic = models.BooleanField(default=False)
    is_refund = models.BooleanField(default=False)
    refund_invoice_id = models.UUIDField(null=True, blank=True)  # the wrong invoice a refund pays back
    # The unrouted deposit a house payout sends back (chains.unrouted); NULL for every merchant's withdrawal.
    refund_deposit = models.ForeignKey(
        "payments.Deposit", null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    reject_reason = models.CharField(max_length=255, blank=True)
    # Why a processing withdrawal is waiting (the payout wallet is short, the fee is over the cap, the node
    # is down); "" when it is not. Shown on the dashboard and in the API additively.
    blocked_reason = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    broadcast_at = models.DateTimeField(null=True, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)  # done or rejected
    # The payout policy's holds (withdrawals.policy), set in the transaction that creates it: the planner
    # leaves it alone until the new-address cool-down ended and, when approval is required, it was approved.
    hold_until = models.DateTimeField(null=True, blank=True)
    approval_required = models.BooleanField(default=False)
    approved_at = models.DateTimeField(null=True, blank=True)
    # The member who made it (confirmed it in the dashboard): someone else approves it when it is held
    # (withdrawals.approvals). NULL for the API, automatic sweeps and refunds. No index: never looked up by.
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["uid"], name="withdrawal_uid_unique"),
            models.CheckConstraint(
                condition=models.Q(status__in=[status.value for status in WithdrawalStatus]),
                name="withdrawal_status_valid",
            ),
            models.CheckConstraint(
                condition=money_check("amount", strictly_positive=True), name="withdrawal_amount_positive"
            ),
            models.CheckConstraint(condition=money_check("fee"), name="withdrawal_fee_not_negative"),
            # Never two sweeps in flight for one company and asset (docs/decisions.md), whatever races.
            models.UniqueConstraint(
                fields=["company", "code"],
                condition=models.Q(is_automatic=True, status="processing"),
                name="withdrawal_one_sweep_in_flight",
            ),
            # One refund per invoice: a replayed refund cannot pay the client twice.
            models.UniqueConstraint(
                fields=["refund_invoice_id"],
                condition=models.Q(refund_invoice_id__isnull=False),
                name="withdrawal_one_refund_per_invoice",
            ),
            # A merchant's withdrawal, or the house sending an unrouted deposit back: never neither.
            models.CheckConstraint(
                condition=models.Q(company__isnull=False, refund_deposit__isnull=True)
                | models.Q(company__isnull=True, refund_deposit__isnull=False),
                name="withdrawal_merchant_or_house",
            ),
            # One live refund per unrouted deposit: the sender is paid once. A rejected one may be followed
            # by another.
            models.UniqueConstraint(
                fields=["refund_deposit"],
                condition=models.Q(refund_deposit__isnull=False) & ~models.Q(status="rejected"),
                name="withdrawal_one_live_deposit_refund",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-created_at"], name="withdrawal_company_idx"),
            models.Index(fields=["status", "created_at"], name="withdrawal_open_idx"),
            # A bulk's withdrawals. Partial: most withdrawals come alone, and a NULL key would still be an
            # entry for each of them to write. `request_id = %s` implies NOT NULL, so lookups use it.
            models.Index(
                fields=["request"], condition=models.Q(request__isnull=False), name="withdrawal_request_idx"
            ),
            # Was an address paid before (the new-address cool-down)? Partial: a withdrawal is inserted
            # processing, so accepting one never writes to it.
            models.Index(
                fields=["company", "code", "to_address"],
                condition=models.Q(status="done"),
                name="withdrawal_paid_address_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.uid} {self.amount} {self.code} ({self.status})"

    @property
    def reference(self) -> str:
        """The ledger reference of its hold, release and post (and the chain send's idempotency key)."""
        return self.REFERENCE.format(self.uid)

    @property
    def held_amount(self) -> Decimal:
        with localcontext(MONEY_CONTEXT):  # exact: the default 28 digits could round a 36-digit sum
            return self.amount + self.fee


class IdempotencyKey(models.Model):
    """An `Idempotency-Key` of one company (docs/decisions.md), kept 24 h.

    Inserted (claimed) in its own transaction before the request executes; the response is stored in the
    transaction that executes it, so a stored response always means the request's effects committed.
    """

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="idempotency_keys")
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)  # sha256 of method, path and canonical body
    claim_token = models.UUIDField()  # who is executing it; a takeover after the lease changes it
    claimed_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)  # NULL: still executing
    response_body = models.TextField(blank=True)  # exact JSON text of the first response
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["company", "key"], name="idempotency_key_unique"),
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_key_age_idx")]

    def __str__(self) -> str:
        return f"{self.company_id}:{self.key} ({self.status_code or 'in progress'})"


class AutoWithdrawalRule(models.Model):
    """docs/api.md: when enabled and available >= amount, sweep the balance to address."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="auto_withdrawal_rules")
    code = models.CharField(max_length=16)
    amount = MoneyField(default=0)  # threshold
    is_enabled = models.BooleanField(default=False)
    address = models.CharField(max_length=128, blank=True)
    tag = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["company", "code"], name="auto_withdrawal_rule_unique"),
            models.CheckConstraint(condition=money_check("amount"), name="auto_withdrawal_amount_not_neg"),
        ]

    def __str__(self) -> str:
        state = "on" if self.is_enabled else "off"
        return f"{self.company_id}/{self.code} >= {self.amount} -> {self.address} ({state})"


class WithdrawalTx(models.Model):
    """A chain transaction that pays a withdrawal: the first plan, then any replacement of it.

    The withdrawal is done when one of its transactions confirms; while any could still confirm it is never
    planned again.
    """

    withdrawal = models.ForeignKey(Withdrawal, on_delete=models.PROTECT, related_name="chain_links")
    chain_tx = models.ForeignKey(ChainTx, on_delete=models.PROTECT, related_name="withdrawal_links")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["withdrawal", "chain_tx"], name="withdrawaltx_once"),
        ]

    def __str__(self) -> str:
        return f"{self.withdrawal_id} in {self.chain_tx_id}"


# --- payout policy (withdrawals.policy) ------------------------------------------------------------------


class PayoutPolicy(models.Model):
    """A company's payout policy settings; its row is also the lock that serialises the withdrawals of a
    company in codes with a 24-hour limit (taken before any account, see withdrawals.policy)."""

    company = models.OneToOneField(
        Company, primary_key=True, on_delete=models.CASCADE, related_name="payout_policy"
    )
    # A withdrawal to an address never paid before waits this long before it is sent (0: no cool-down).
    new_address_cooldown_hours = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"payout policy of {self.company_id}"


class PayoutLimit(models.Model):
    """The limits of one payment code; NULL is no limit. Amounts are net, as the merchant asks for them."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="payout_limits")
    code = models.CharField(max_length=16)
    max_per_withdrawal = MoneyField(null=True, blank=True)
    max_per_day = MoneyField(null=True, blank=True)  # rolling 24 hours, withdrawals not rejected
    approval_above = MoneyField(null=True, blank=True)  # a larger withdrawal waits for an approval
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["company", "code"], name="payout_limit_unique"),
            models.CheckConstraint(
                condition=money_check("max_per_withdrawal", strictly_positive=True),
                name="payout_limit_one_positive",
            ),
            models.CheckConstraint(
                condition=money_check("max_per_day", strictly_positive=True), name="payout_limit_day_positive"
            ),
            models.CheckConstraint(
                condition=money_check("approval_above", strictly_positive=True),
                name="payout_limit_approval_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.company_id}/{self.code} limits"

    @property
    def is_empty(self) -> bool:
        return self.max_per_withdrawal is None and self.max_per_day is None and self.approval_above is None


class PayoutAddress(models.Model):
    """An address on the merchant's payout allowlist: withdrawals to it skip the new-address cool-down."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="payout_addresses")
    code = models.CharField(max_length=16)
    address = models.CharField(max_length=128)
    tag = models.CharField(max_length=64, blank=True)  # "" when the chain has no tags
    label = models.CharField(max_length=100, blank=True)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["company", "code", "address", "tag"], name="payout_address_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.company_id}/{self.code} {self.address} {self.label}".strip()


class PayoutDraft(models.Model):
    """Dashboard withdrawals shown on their confirmation page: the exact items, sent at most once.

    The page's form carries only the token; its row lock lets one submission send and every other one (a
    double click, the back button, a second tab) find `sent_at` and show what was sent.
    """

    class Kind(models.TextChoices):
        SINGLE = "single"
        BULK = "bulk"

    token = models.CharField(max_length=64, unique=True)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="payout_drafts")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    items = models.JSONField()  # [{"asset", "to", "amount" (text), "tag"}], as checked on the way in
    skipped = models.PositiveIntegerField(default=0)  # invalid lines of a bulk file left out
    uids = models.JSONField(default=list)  # the withdrawals it created, once sent
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["created_at"], name="payout_draft_age_idx")]

    def __str__(self) -> str:
        return f"{self.kind} draft of {self.company_id} ({'sent' if self.sent_at else 'not sent'})"
