"""What Kassa keeps about the chains themselves: scan cursors, watched ranges and the payout transactions."""

from __future__ import annotations

from django.db import models

from core.fields import MoneyField, money_check
from core.money import number_text


class ChainCursor(models.Model):
    """Where ingestion of one payment code stands: the backend's opaque cursor and the tip it last saw.

    Saved in the same commit as what the scan ingested; `version` makes the save a compare-and-swap, so
    two scanners of one code can never both advance it.
    """

    code = models.CharField(max_length=16, unique=True)
    cursor = models.JSONField(default=dict)
    tip_height = models.PositiveBigIntegerField(null=True)
    tip_hash = models.CharField(max_length=128, blank=True)
    version = models.PositiveBigIntegerField(default=0)
    scanned_at = models.DateTimeField(null=True)
    # Set while the node cannot be reached: ingestion of this code pauses (and says so once) until it is back.
    paused_reason = models.CharField(max_length=255, blank=True)

    def __str__(self) -> str:
        return f"{self.code} at {self.tip_height}"


class WatchRange(models.Model):
    """How far the node watches a code's deposit addresses: every index up to `watched_until` is imported."""

    code = models.CharField(max_length=16, unique=True)
    watched_until = models.BigIntegerField(default=-1)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.code} watched to {self.watched_until}"


class PoolKey(models.Model):
    """A deposit key the signer generated and holds, exported here by its public key only (NEAR: ed25519 has
    no public derivation, so the signer hands out the public keys of its pool, chains.near.pool). Key
    number `index` serves the deposit address of derivation index `index`: an index is handed out once, so a
    key serves one deposit address, and a deleted account's key never serves another."""

    family = models.CharField(max_length=16)
    # The seed it is of, by the seed's hot public key (hex): after the operator moves to another seed, the
    # keys of the old one are never handed out again (the new signer could not sweep them).
    seed_key = models.CharField(max_length=64)
    index = models.PositiveBigIntegerField()
    public_key = models.CharField(max_length=64)  # 32 bytes in hex
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["family", "seed_key", "index"], name="pool_key_index_unique"),
            models.UniqueConstraint(fields=["family", "public_key"], name="pool_key_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.family} pool key {self.index}"


class PayoutWallet(models.Model):
    """The payout (hot) wallet of one code as beat's payout monitor last read it (chains.wallets): for
    `/metrics` and the operator, never to decide a payout (the node decides that when it builds one)."""

    code = models.CharField(max_length=16, unique=True)
    balance = MoneyField()  # what the wallet can spend now (the backend's `spendable`)
    gas_tank = MoneyField(null=True)  # account chains: the hot address's native coin, which pays the gas
    read_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=money_check("balance"), name="payout_wallet_balance"),
            models.CheckConstraint(
                condition=models.Q(gas_tank__isnull=True) | money_check("gas_tank"), name="payout_wallet_gas"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code} payout wallet {self.balance}"


class ChainTxStatus(models.TextChoices):
    SIGNED = "signed"  # stored, not yet accepted by the node: the stored bytes are (re)sent
    BROADCAST = "broadcast"  # the node has it (mempool or block)
    CONFIRMED = "confirmed"  # reached the asset's confirmations: its withdrawals are done
    REPLACED = "replaced"  # a replacement of it confirmed instead
    FAILED = "failed"  # can never confirm (conflicted, rejected for good)


class ChainTx(models.Model):
    """A payout transaction: signed bytes and txid stored in one commit before the first broadcast.

    A retry re-sends `raw`, never a rebuilt transaction; a withdrawal is never planned again while a
    transaction of its could still confirm. Replacements (RBF) and children (CPFP) are rows of their own.
    """

    class Kind(models.TextChoices):
        PAYOUT = "payout"
        BUMP = "bump"  # a replacement paying more (RBF; EVM: the same nonce, higher fees) of `replaces`
        CHILD = "child"  # a child paying for `replaces` (CPFP)
        TOPUP = "topup"  # gas (EVM) or TRX (TRON) sent from the hot address to a deposit address to sweep
        SWEEP = "sweep"  # a deposit address's funds moved to the hot address
        ACTIVATE = "activate"  # TRON: a deposit address created on chain before it signs its sweep
        DELEGATE = "delegate"  # TRON: staked energy lent to a deposit address for its sweep
        UNDELEGATE = "undelegate"  # TRON: that energy taken back once the sweep is final

    code = models.CharField(max_length=16)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PAYOUT)
    txid = models.CharField(max_length=128, unique=True)
    raw = models.TextField()
    status = models.CharField(max_length=16, choices=ChainTxStatus.choices, default=ChainTxStatus.SIGNED)
    fee = MoneyField()  # what the transaction pays the network, in the coin
    fee_rate = models.CharField(max_length=40, blank=True)  # the quote it was built with, for the record
    replaces = models.ForeignKey("self", null=True, on_delete=models.PROTECT, related_name="replacements")
    # Account-based chains (EVM): the sending address and the nonce the transaction uses. A replacement
    # shares its original's nonce; one of them at most can ever be mined.
    sender = models.CharField(max_length=128, blank=True)
    nonce = models.PositiveBigIntegerField(null=True)
    fee_paid = MoneyField(null=True)  # what it actually paid once mined (EVM: gasUsed x effective price)
    # The sweep a top-up, activation, delegation, sweep or undelegation belongs to (chains.sweeps).
    sweep = models.ForeignKey("Sweep", null=True, on_delete=models.PROTECT, related_name="steps")
    confirmations = models.IntegerField(default=0)
    # The block that holds it once confirmed, and since when the chain no longer does (a reorganisation
    # deeper than the confirmations): the settled watch (chains.settled) follows it for a window of blocks.
    block_height = models.PositiveBigIntegerField(null=True)
    block_hash = models.CharField(max_length=128, blank=True)
    reversed_at = models.DateTimeField(null=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    broadcast_at = models.DateTimeField(null=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=money_check("fee"), name="chaintx_fee_not_negative"),
            models.CheckConstraint(
                condition=models.Q(status__in=ChainTxStatus.values), name="chaintx_status_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["code", "status"], name="chaintx_open_idx"),
            models.Index(
                fields=["code"], condition=models.Q(reversed_at__isnull=False), name="chaintx_reversed_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code}:{self.txid} ({self.status})"


class HouseEntry(models.Model):
    """The house account: what the operator, not a merchant, paid the network. One row per mined chain
    transaction (payout, replacement, child, sweep, top-up), booked in the commit that settles it;
    append-only. Merchants pay the asset's configured network fee; the difference shows in
    `manage.py chain fees`."""

    class Kind(models.TextChoices):
        NETWORK_FEE = "network_fee"

    code = models.CharField(max_length=16)  # the code the transaction moved
    coin = models.CharField(max_length=16)  # the code of what the fee was paid in (usdterc20's gas: eth)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NETWORK_FEE)
    amount = MoneyField()  # paid out by the house
    chain_tx = models.OneToOneField(ChainTx, on_delete=models.PROTECT, related_name="house_entry")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=money_check("amount"), name="house_entry_amount")]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} {self.coin} for {self.code}"


class NonceSlot(models.Model):
    """The next nonce of one sending address on one EVM chain, advanced under its row lock in the same
    commit that stores the signed transaction using it: a crash never leaves a gap, two planners never
    use one nonce twice."""

    chain = models.CharField(max_length=32)  # "evm:<chain id>"
    address = models.CharField(max_length=64)  # lowercase 0x...
    next_nonce = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chain", "address"], name="nonce_slot_unique")]

    def __str__(self) -> str:
        return f"{self.chain}:{self.address} next {self.next_nonce}"


class SweepStatus(models.TextChoices):
    TOPUP = "topup"  # the address is given what its sweep needs first (gas; TRON: activation, energy)
    READY = "ready"  # the address has what it needs: the sweep transaction is built next
    SENT = "sent"  # the sweep transaction is stored (and sent): waiting for it to be mined
    DONE = "done"  # mined: the funds are at the hot address
    FAILED = "failed"  # failed on chain, or refused by the token (a blacklisted address): a person looks


class Sweep(models.Model):
    """Moving what one deposit address holds of one code to the hot address, step by step, each step stored
    before it is sent so a crash resumes where it stopped (chains.sweeps: its one state machine)."""

    Status = SweepStatus

    code = models.CharField(max_length=16)
    address = models.CharField(max_length=64)  # the deposit address (EVM: lowercase 0x...; TRON: T...)
    derivation_index = models.PositiveBigIntegerField()
    amount = MoneyField()  # what is swept, in the coin of `code`
    status = models.CharField(max_length=16, choices=SweepStatus.choices, default=SweepStatus.READY)
    # The step readying the address now in flight (EVM: its gas top-up, kept once mined; TRON: cleared once
    # final, each step's row keeps `sweep`), the sweep transaction, and the undelegation of lent energy.
    topup_tx = models.ForeignKey(ChainTx, null=True, on_delete=models.PROTECT, related_name="+")
    sweep_tx = models.ForeignKey(ChainTx, null=True, on_delete=models.PROTECT, related_name="+")
    release_tx = models.ForeignKey(ChainTx, null=True, on_delete=models.PROTECT, related_name="+")
    # TRON: the staked TRX whose energy is lent to the address now, and the address that lent it.
    delegated = MoneyField(default=0)
    lender = models.CharField(max_length=64, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=money_check("amount", strictly_positive=True), name="sweep_amount"
            ),
            models.CheckConstraint(condition=money_check("delegated"), name="sweep_delegated"),
            models.CheckConstraint(
                condition=models.Q(status__in=SweepStatus.values), name="sweep_status_valid"
            ),
            # One sweep in flight per address and code: a second one could spend the same funds.
            models.UniqueConstraint(
                fields=["code", "address"],
                condition=~models.Q(status__in=[SweepStatus.DONE, SweepStatus.FAILED]),
                name="sweep_one_open",
            ),
        ]

    def __str__(self) -> str:
        return f"sweep {self.code} {self.address} {number_text(self.amount)} ({self.status})"


# --- unrouted deposits (chains.unrouted) ----------------------------------------------------------------


class UnroutedStatus(models.TextChoices):
    OPEN = "open"  # waiting for a person; acted on only once its deposit is confirmed
    ASSIGNED = "assigned"  # credited to the invoice or static address a person chose
    REFUNDING = "refunding"  # a house payout back to the sender (or the address a person gave) is on its way
    REFUNDED = "refunded"  # that payout is done
    VOID = "void"  # the chain failed or dropped the transfer before it was final: nothing arrived
    KEPT = (
        "kept"  # a person said it is the house's own (its funding of the receiving wallet): no one's credit
    )


class UnroutedReason(models.TextChoices):
    # To a shared deposit address (TON's comment, Solana's reference) without its tag.
    NO_TAG = "no_tag", "no tag (comment, memo or reference)"
    # To a shared deposit address with a tag that names no invoice or address.
    UNKNOWN_TAG = "unknown_tag", "a tag that names nothing"
    UNKNOWN_ADDRESS = "unknown_address", "not a deposit address"
    # To a deposit address of another asset (ETH sent to a USDC address).
    WRONG_ASSET = "wrong_asset", "another asset's deposit address"


class UnroutedDeposit(models.Model):
    """A final-or-not deposit no invoice or static address owns: recorded at first sight, shown to the
    operator, and moved only by a person (chains.unrouted: its one state machine). Never credited to a
    guess."""

    Status = UnroutedStatus
    Reason = UnroutedReason

    deposit = models.OneToOneField("payments.Deposit", on_delete=models.PROTECT, related_name="unrouted")
    code = models.CharField(max_length=16)
    reason = models.CharField(max_length=16, choices=UnroutedReason.choices)
    status = models.CharField(max_length=16, choices=UnroutedStatus.choices, default=UnroutedStatus.OPEN)
    # Where a person routed it (the invoice's or static address's deposit address), once assigned.
    assigned_to = models.ForeignKey(
        "payments.DepositAddress", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    refund_to = models.CharField(max_length=128, blank=True)
    refund_tag = models.CharField(max_length=64, blank=True)
    refund_uid = models.CharField(max_length=32, blank=True)  # the house withdrawal paying it back
    refunds = models.PositiveIntegerField(default=0)  # refunds started (a failed one is followed by another)
    note = models.CharField(max_length=255, blank=True)  # why the last refund failed
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=UnroutedStatus.values), name="unrouted_status_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(reason__in=UnroutedReason.values), name="unrouted_reason_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "code"], name="unrouted_open_idx")]

    def __str__(self) -> str:
        return f"unrouted {self.code} deposit {self.deposit_id} ({self.status})"


class UnroutedEvent(models.Model):
    """The audit trail of an unrouted deposit: every transition, who made it, when and why. Append-only,
    written in the transition's transaction."""

    unrouted = models.ForeignKey(UnroutedDeposit, on_delete=models.PROTECT, related_name="events")
    action = models.CharField(max_length=32)  # the transition: recorded, assign, refund, refunded, ...
    by = models.CharField(max_length=254)  # the person, or "kassa" for what the code did
    detail = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.action} by {self.by}"


class ClaimStatus(models.TextChoices):
    OPEN = "open"  # the operator has not decided yet
    CREDITED = "credited"  # the payment was assigned to one of the merchant's invoices or addresses
    REFUNDED = "refunded"  # the payment was sent back to its sender
    DECLINED = "declined"  # the payment went to someone else


class DepositClaim(models.Model):
    """A merchant's word that a payment (its transaction hash) was meant for it: shown to the operator
    beside the matching unrouted deposit; the operator decides."""

    Status = ClaimStatus

    company = models.ForeignKey("payments.Company", on_delete=models.PROTECT, related_name="deposit_claims")
    code = models.CharField(max_length=16)
    txid = models.CharField(max_length=128)
    invoice_id = models.UUIDField(null=True, blank=True)  # the invoice the merchant says it pays
    message = models.CharField(max_length=500, blank=True)
    status = models.CharField(max_length=16, choices=ClaimStatus.choices, default=ClaimStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["company", "code", "txid"], name="deposit_claim_once"),
            models.CheckConstraint(
                condition=models.Q(status__in=ClaimStatus.values), name="claim_status_valid"
            ),
        ]
        indexes = [models.Index(fields=["code", "txid"], name="deposit_claim_tx_idx")]

    def __str__(self) -> str:
        return f"claim {self.code}:{self.txid} ({self.status})"
