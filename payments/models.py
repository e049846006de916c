from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from core.assets import BASE_ASSETS
from core.fields import MoneyField, money_check


def _all_base_assets() -> list[str]:
    return list(BASE_ASSETS)


class Company(models.Model):
    """The merchant. Its public token is kept only as a SHA-256 hash; its signing secret encrypted."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Short, human-sized and never reused: the first part of withdrawal uids ("007-1042").
    number = models.PositiveIntegerField(unique=True)
    name = models.CharField(max_length=200)
    logo_url = models.URLField(max_length=2048, blank=True)
    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="company")
    token_hash = models.CharField(max_length=64, unique=True)
    token_prefix = models.CharField(max_length=16)
    token_rotated_at = models.DateTimeField()
    # Written at most once a minute per token (payments.tokens), never on every request.
    token_last_used_at = models.DateTimeField(null=True, blank=True)
    signing_secret_encrypted = models.TextField()
    # After a rotation the previous secret keeps signing beside the new one until then (webhooks.signing).
    previous_signing_secret_encrypted = models.TextField(blank=True)
    previous_signing_secret_until = models.DateTimeField(null=True, blank=True)
    webhook_url = models.CharField(max_length=2048, blank=True)
    redirect_url = models.CharField(max_length=2048, blank=True)
    allowed_assets = models.JSONField(default=_all_base_assets)
    default_fee_payer = models.CharField(max_length=16, default="buyer")  # "buyer" or "merchant"
    # Service fee on invoices, percent of the converted total; NULL = the INVOICE_FEE_PERCENT setting.
    fee_percent = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    # Static deposit addresses: reuse a user's address found by e-mail when no internal_user_id matches.
    # Off by default: the e-mail is the merchant's users' own claim, so an unverified one would hand one
    # user another's address (docs/security.md).
    static_deposit_match_email = models.BooleanField(default=False)
    # Set by withdrawals.policy when the merchant has any payout rule (limits, cool-down, approvals): with
    # it off, a withdrawal reads no policy rows at all.
    payout_policy_active = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "companies"
        constraints = [
            models.CheckConstraint(condition=models.Q(number__gt=0), name="company_number_positive")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.uid_prefix})"

    @property
    def uid_prefix(self) -> str:
        return f"{self.number:03d}"


class ApiToken(models.Model):
    """A named API token of a company, limited to its scopes and optionally to client networks.

    Kept as a SHA-256 hash and shown once; revoked, never deleted, so its name and last use stay listed.
    The company's own token (Company.token_hash) stays beside these with every scope.
    """

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    token_prefix = models.CharField(max_length=16)
    scopes = models.JSONField(default=list)  # scope names (payments.tokens.SCOPES)
    allowed_networks = models.JSONField(default=list)  # CIDRs, IPv4 and IPv6; empty: any address
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # The member who made it (None: the command line, or made before members had roles). Kept when that
    # member leaves: the token stays listed under their name until someone revokes it.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            # Names tell a merchant's live tokens apart (the dashboard, `manage.py revoke_token`).
            models.UniqueConstraint(
                fields=["company", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="api_token_live_name_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.token_prefix})"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


MONEY: dict[str, Any] = {"max_digits": 36, "decimal_places": 18}


class FeePayer(models.TextChoices):
    BUYER = "buyer"
    MERCHANT = "merchant"


# --- Ledger ---------------------------------------------------------------------------------------------


class Account(models.Model):
    """A company's balance in one payment code. Changed only by payments.ledger, under a row lock."""

    # No index of its own: the unique account_company_code_unique (company, code) serves it.
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="accounts", db_index=False)
    code = models.CharField(max_length=16)
    available = MoneyField(default=0)
    held = MoneyField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["company", "code"], name="account_company_code_unique"),
            models.CheckConstraint(condition=money_check("available"), name="account_available_not_negative"),
            models.CheckConstraint(condition=money_check("held"), name="account_held_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.company_id}/{self.code}: {self.available} (+{self.held} held)"


class LedgerEntry(models.Model):
    """Append-only: never updated or deleted; a correction is a new entry."""

    class Kind(models.TextChoices):
        DEPOSIT_CREDIT = "deposit_credit"  # static address deposit, confirmed
        INVOICE_CREDIT = "invoice_credit"  # invoice payment, confirmed (net of fee when the merchant pays it)
        WITHDRAWAL_HOLD = "withdrawal_hold"  # available -> held at acceptance
        WITHDRAWAL_RELEASE = "withdrawal_release"  # held -> available on rejection
        WITHDRAWAL_POST = "withdrawal_post"  # held leaves on completion
        ADJUSTMENT = "adjustment"

    # No index of its own: ledger_account_time_idx and ledger_entry_once start with it.
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="entries", db_index=False)
    kind = models.CharField(max_length=24, choices=Kind.choices)
    available_delta = MoneyField()
    held_delta = MoneyField()
    # What caused it, e.g. "deposit:42" or "withdrawal:007-1042"; one entry per (account, kind, reference)
    # makes a replayed credit or a retried task a database error rather than a second payment.
    reference = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["account", "kind", "reference"], name="ledger_entry_once"),
            models.CheckConstraint(
                condition=models.Q(
                    kind__in=[
                        "deposit_credit",
                        "invoice_credit",
                        "withdrawal_hold",
                        "withdrawal_release",
                        "withdrawal_post",
                        "adjustment",
                    ]
                ),
                name="ledger_entry_kind_valid",
            ),
        ]
        indexes = [models.Index(fields=["account", "created_at"], name="ledger_account_time_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.available_delta}/{self.held_delta} ({self.reference})"


# --- Deposit addresses ----------------------------------------------------------------------------------


class DerivationCounter(models.Model):
    """The next unused derivation index of a key family, handed out under a row lock."""

    family = models.CharField(max_length=16, primary_key=True)
    next_index = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.family}: {self.next_index}"


class DepositAddress(models.Model):
    class Owner(models.TextChoices):
        INVOICE = "invoice"
        STATIC = "static"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="deposit_addresses")
    code = models.CharField(max_length=16)
    address = models.CharField(max_length=128)
    tag = models.CharField(max_length=64, blank=True)  # "" when the chain has no tags (never NULL: unique)
    # chains.addresses.route_key(address): the one spelling transfers are matched on (EVM case, TON forms).
    route_key = models.CharField(max_length=128)
    derivation_index = models.PositiveBigIntegerField()
    owner = models.CharField(max_length=16, choices=Owner.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Never two owners on one (address, tag): a transfer must route to exactly one place.
            models.UniqueConstraint(fields=["address", "tag"], name="deposit_address_unique"),
            models.UniqueConstraint(fields=["route_key", "tag"], name="deposit_route_unique"),
            models.CheckConstraint(
                condition=models.Q(owner__in=["invoice", "static"]), name="deposit_owner_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code}:{self.address}{'#' + self.tag if self.tag else ''}"


class StaticDepositAddress(models.Model):
    """A permanent address for one of the merchant's users (docs/decisions.md)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="static_addresses")
    deposit_address = models.OneToOneField(DepositAddress, on_delete=models.PROTECT, related_name="static")
    code = models.CharField(max_length=16)
    internal_user_id = models.CharField(max_length=128)
    email = models.EmailField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["company", "code", "internal_user_id"], name="static_address_user_unique"
            ),
        ]
        indexes = [models.Index(fields=["company", "code", "email"], name="static_address_email_idx")]

    def __str__(self) -> str:
        return f"{self.code} for {self.internal_user_id}"


# --- Deposits -------------------------------------------------------------------------------------------


class DepositStatus(models.TextChoices):
    SEEN = "seen"  # in the mempool or below the required confirmations
    CONFIRMED = "confirmed"
    FAILED = "failed"
    FROZEN = "frozen"
    DROPPED = "dropped"  # a reorg or a double-spend removed it before it was credited


class Deposit(models.Model):
    """A transfer seen on a chain, recorded once per (code, txid, output index), routed or not."""

    Status = DepositStatus

    code = models.CharField(max_length=16)
    txid = models.CharField(max_length=128)
    output_index = models.PositiveIntegerField(default=0)
    address = models.CharField(max_length=128)
    tag = models.CharField(max_length=64, blank=True)
    from_address = models.CharField(max_length=128, blank=True)
    amount = MoneyField()
    confirmations = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SEEN)
    block_height = models.PositiveBigIntegerField(null=True)  # NULL while in the mempool
    block_hash = models.CharField(max_length=128, blank=True)
    deposit_address = models.ForeignKey(
        DepositAddress, null=True, on_delete=models.PROTECT, related_name="deposits"
    )  # NULL: sent to an address we do not know; recorded, never dropped
    company = models.ForeignKey(Company, null=True, on_delete=models.PROTECT, related_name="deposits")
    is_late = models.BooleanField(default=False)  # arrived after its invoice was final
    seen_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(null=True)
    # A credited deposit the chain no longer holds (a reorganisation deeper than the confirmations): stays
    # confirmed and credited, with an alert for a person (chains.settled); cleared when it is mined again.
    reversed_at = models.DateTimeField(null=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["code", "txid", "output_index"], name="deposit_transfer_once"),
            models.CheckConstraint(
                condition=money_check("amount", strictly_positive=True), name="deposit_amount_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=DepositStatus.values), name="deposit_status_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "code"], name="deposit_open_idx"),
            # The settled watch: credited deposits of a code in its last blocks, and those reversed.
            models.Index(
                fields=["code", "block_height"],
                condition=models.Q(status="confirmed"),
                name="deposit_settled_idx",
            ),
            models.Index(
                fields=["code"], condition=models.Q(reversed_at__isnull=False), name="deposit_reversed_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code}:{self.txid}:{self.output_index} {self.amount} ({self.status})"


# --- Sandbox chain --------------------------------------------------------------------------------------


class QuarantinedTransfer(models.Model):
    """A transfer whose ingestion raised: set aside so the rest of its chain (and every other chain) goes on.

    Retried with a growing pause (chains.deposits); the row goes once an attempt succeeds. Listed for a
    person by `manage.py chain_quarantine`; every failure is also logged at ERROR.
    """

    code = models.CharField(max_length=16)
    txid = models.CharField(max_length=128)
    output_index = models.PositiveIntegerField(default=0)
    error = models.TextField()
    attempts = models.PositiveIntegerField(default=1)
    first_failed_at = models.DateTimeField(auto_now_add=True)
    last_failed_at = models.DateTimeField()
    retry_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["code", "txid", "output_index"], name="quarantine_transfer_once")
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.txid}:{self.output_index}"


class SandboxBlock(models.Model):
    code = models.CharField(max_length=16)
    height = models.PositiveBigIntegerField()
    mined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["code", "height"], name="sandbox_block_unique")]

    def __str__(self) -> str:
        return f"{self.code} #{self.height}"


class SandboxTransaction(models.Model):
    """A transaction on the simulated chain of one code; confirmations = tip - block_height + 1."""

    class Kind(models.TextChoices):
        DEPOSIT = "deposit"  # into the gateway (sandbox API / pay page simulator)
        WITHDRAWAL = "withdrawal"  # broadcast by the gateway

    class Outcome(models.TextChoices):
        CONFIRM = "confirm"
        FAIL = "fail"  # fails on chain once mined
        FREEZE = "freeze"  # blocked by compliance once mined

    code = models.CharField(max_length=16)
    txid = models.CharField(max_length=128, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    from_address = models.CharField(max_length=128, blank=True)
    to_address = models.CharField(max_length=128)
    tag = models.CharField(max_length=64, blank=True)
    amount = MoneyField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.CONFIRM)
    block_height = models.PositiveBigIntegerField(null=True)  # NULL: in the mempool
    reference = models.CharField(max_length=100, blank=True)  # withdrawal uid for broadcasts
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["code", "block_height"], name="sandbox_tx_block_idx")]
        constraints = [
            # A broadcast happens once per withdrawal, whatever a retried task does.
            models.UniqueConstraint(
                fields=["kind", "reference"],
                condition=~models.Q(reference=""),
                name="sandbox_tx_reference_once",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.txid}"


# The company's people, in their own module (payments.team); imported here so that Django finds them.
from payments.team import Invitation as Invitation  # noqa: E402
from payments.team import Membership as Membership  # noqa: E402
