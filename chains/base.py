"""What chain backends and their callers exchange: the data classes, the `Signer` and the exceptions of the
chain backend contract (chains.backend holds the contract itself and the backend registry)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any, Protocol

FAILED = "failed"
FROZEN = "frozen"
PENDING = "pending"
DROPPED = "dropped"  # gone from the chain: a reorg or a double-spend removed it


@dataclass(frozen=True)
class BlockRef:
    height: int
    hash: str


@dataclass(frozen=True)
class TransferKey:
    """One transfer on a chain: the transaction and the output (BTC family vout; EVM log index, 0 native)."""

    code: str
    txid: str
    output_index: int


@dataclass(frozen=True)
class ChainTransfer:
    """An incoming transfer as a chain reports it. `state` is pending until the chain fails or freezes it."""

    code: str
    txid: str
    output_index: int
    address: str
    tag: str
    amount: Decimal
    confirmations: int
    from_address: str = ""
    state: str = PENDING  # PENDING, FAILED (failed on chain), FROZEN (blocked by compliance) or DROPPED
    block: BlockRef | None = None  # the block that holds it; None while in the mempool
    # The chain's own finality signal, where it has one (TRON: its block is solidified): the deposit is
    # credited when True and never before, whatever the count. None: final at the asset's confirmations.
    final: bool | None = None

    @property
    def key(self) -> TransferKey:
        return TransferKey(self.code, self.txid, self.output_index)


@dataclass(frozen=True)
class ScanResult:
    """What changed on a chain since a cursor.

    `transfers` are the incoming transfers to watched addresses seen or changed since the cursor, with
    their confirmations counted from `tip`; `dropped` are transfers the chain no longer holds (a reorg
    removed them). `cursor` is opaque JSON the caller stores in the same commit as what it ingested and
    hands back on the next scan; `more` says the scan stopped early and should run again at once.
    """

    transfers: list[ChainTransfer]
    dropped: list[TransferKey]
    tip: BlockRef
    cursor: dict[str, Any]
    more: bool = False


@dataclass(frozen=True)
class Payment:
    """One output of a payout: `key` is "withdrawal:<uid>" (the same key never pays twice)."""

    key: str
    to: str
    tag: str
    amount: Decimal
    # Chains whose payments can bounce (TON): False sends it non-bounceable whatever the address's form (a
    # person approved that after it bounced once); None follows the address.
    bounce: bool | None = None


@dataclass(frozen=True)
class FeeQuote:
    """A fee rate in the chain's unit (BTC family: coin per kvB), where it came from, and the cap it met."""

    rate: Decimal
    unit: str
    source: str  # "estimatesmartfee", "estimatefee", "fallback", "fixed", "eip1559"
    over_cap: bool = False
    priority: Decimal | None = None  # EIP-1559: the tip per gas, in the same unit as `rate` (maxFeePerGas)


@dataclass(frozen=True)
class UnsignedTx:
    code: str
    payload: str  # the backend's own encoding (BTC family: a base64 PSBT)
    payments: tuple[Payment, ...]
    fee: Decimal  # the fee this transaction pays, in the coin (EVM: the most it can pay, in the native coin)
    sender: str = ""  # account-based chains: the sending address and the nonce it uses
    nonce: int | None = None


@dataclass(frozen=True)
class SignedTx:
    txid: str
    raw: str  # hex of the signed transaction: what is stored before the first broadcast and re-sent
    fee: Decimal
    sender: str = ""  # account-based chains: stored with the transaction, and the nonce taken in that commit
    nonce: int | None = None
    chain: str = ""  # the nonce's chain ("evm:<chain id>")


class Outcome(StrEnum):
    ACCEPTED = "accepted"
    ALREADY_KNOWN = "already_known"  # in the mempool already
    ALREADY_MINED = "already_mined"  # in a block already
    CONFLICT = "conflict"  # its inputs were spent by another transaction
    REJECTED = "rejected"  # the node refused it for good
    # The node's head is past its expiration and no block holds it: it can never be mined (TRON). Not a
    # refusal for a person: the payout monitor closes it and pays its withdrawals anew (withdrawals.expiry).
    EXPIRED = "expired"
    UNAVAILABLE = "unavailable"  # the node could not be asked: try again later


@dataclass(frozen=True)
class TxStatus:
    """A sent transaction as the chain sees it; confirmations < 0: a conflicting transaction won."""

    confirmations: int
    known: bool
    block: BlockRef | None = None
    failed: bool = False  # mined but failed (EVM status 0, a sandbox "fail"/"freeze"): it can never pay
    failure: str = ""  # how it failed, in a word ("failed", "frozen") for the withdrawal's reason
    fee_paid: Decimal | None = None  # once mined, what it paid the network where the chain says (EVM gas)
    # The chain's own finality signal where it has one (TRON: its block is solidified), which decides a
    # payout instead of the asset's `confirmations`; None where the count decides.
    final: bool | None = None
    # TON: the recipient's account refused the payment and it came back (an undeployed wallet and a
    # bounceable message): nothing was paid, the withdrawal waits for a person (withdrawals.bounces).
    bounced: bool = False


class ChainUnavailable(Exception):
    """The chain's node could not be asked (down, unreachable, not answering): pause and try again later."""


class PayoutHeld(Exception):
    """Payouts of a code cannot go out now for a reason a person can fix: the withdrawals stay processing
    with the reason shown, an alert of `kind` is raised, and the next plan tries again."""

    kind = "payout_held"
    reason = "Waiting"
    alerts = True  # False: an ordinary wait that ends by itself (shown on the withdrawals, nobody told)

    def __str__(self) -> str:
        detail = super().__str__()
        return f"{self.reason}: {detail}" if detail else self.reason


def held_kinds() -> set[str]:
    """The alert kinds of every PayoutHeld reason (a backend may add its own)."""
    found, todo = set(), [PayoutHeld]
    while todo:
        cls = todo.pop()
        found.add(cls.kind)
        todo.extend(cls.__subclasses__())
    return found


class InsufficientFunds(PayoutHeld):
    """The payout wallet cannot pay this now: the withdrawals wait until it is funded."""

    kind = "payout_wallet_short"
    reason = "The payout wallet is short"


class FeeOverCap(PayoutHeld):
    """The fee the chain asks is over the configured cap: the batch waits for a lower one."""

    kind = "fee_over_cap"
    reason = "Waiting for a lower network fee"


class PayoutRefused(Exception):
    """Whoever signs or sends a payout (`refused_by`) refuses this one for good, for the reason it gives:
    the withdrawal waits with it. Any other error of a build or a signature is the node's refusal."""

    refused_by = "The node"


class PayoutWalletLocked(PayoutHeld):
    """The payout wallet is encrypted and locked: the operator unlocks it (walletpassphrase)."""

    kind = "payout_wallet_locked"
    reason = "The payout wallet is locked"


class Signer(Protocol):
    """The custody boundary: the only place a private key is used."""

    def sign(self, tx: UnsignedTx) -> SignedTx: ...
