"""The one interface every chain backend implements (docs/architecture.md), and the backend registry.

Which backend serves which payment code is the `CHAIN_BACKENDS` setting; every code runs on the sandbox
chain unless configured otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from chains.derivation import derive_address
from core.assets import all_assets, get_asset

if TYPE_CHECKING:
    from payments.models import Company

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


class ChainUnavailable(Exception):
    """The chain's node could not be asked (down, unreachable, not answering): pause and try again later."""


class PayoutHeld(Exception):
    """Payouts of a code cannot go out now for a reason a person can fix: the withdrawals stay processing
    with the reason shown, an alert of `kind` is raised, and the next plan tries again."""

    kind = "payout_held"
    reason = "Waiting"

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


class PayoutWalletLocked(PayoutHeld):
    """The payout wallet is encrypted and locked: the operator unlocks it (walletpassphrase)."""

    kind = "payout_wallet_locked"
    reason = "The payout wallet is locked"


class PayoutBackend(Protocol):
    """plan -> sign -> store -> broadcast -> monitor (withdrawals.payouts drives it).

    `build` plans one transaction paying every payment (raises InsufficientFunds or FeeOverCap), the
    `Signer` signs it, the caller stores the signed bytes and txid in one commit, and only then
    `broadcast` sends them; a retry sends the same bytes again, never a rebuilt transaction.
    """

    def quote_fee(self, code: str) -> FeeQuote: ...

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx: ...

    def signer(self, code: str) -> Signer: ...

    def broadcast(self, code: str, tx: SignedTx) -> Outcome: ...

    def tx_status(self, code: str, txid: str) -> TxStatus: ...

    def spendable(self, code: str) -> Decimal: ...

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        """A replacement of a stuck transaction (RBF: the same payments, a higher fee), signed; None where
        the chain or node cannot replace it."""
        ...

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        """A child of a stuck transaction (CPFP): spends its change back to the payout wallet and pays
        enough that the two together pay `fee`, signed; None where it cannot (no change, or the parent
        already pays that rate)."""
        ...


class Signer(Protocol):
    """The custody boundary: the only place a private key is used."""

    def sign(self, tx: UnsignedTx) -> SignedTx: ...


class ChainBackend(PayoutBackend, Protocol):
    """Deposits (addresses, watching, scanning) and, from PayoutBackend, payouts."""

    name: str

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]: ...

    def ensure_watched(self, code: str, upto_index: int) -> int:
        """Make the node watch every deposit address up to `upto_index`; returns the index watched up to."""
        ...

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult: ...

    def tip(self, code: str) -> BlockRef:
        """The node's best block now."""
        ...

    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        """A cursor from which the next scan reports everything after block `height` (a rescan)."""
        ...

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        """The current state of open transfers the scan did not mention (DROPPED when gone for good)."""
        ...

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        """The block is still in the node's best chain (the settled watch: what it holds is still mined)."""
        ...

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        """An incoming transaction as the chain sees it now, as `tx_status` tells a sent one: mined (with
        its block), waiting in the mempool, or neither (known=False, or confirmations < 0: a conflict won)."""
        ...

    def explorer_url(self, code: str, txid: str) -> str: ...


class XpubAddressesMixin:
    """Deposit addresses derived from the configured extended public keys (chains.derivation)."""

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]:
        return derive_address(code, index)


BACKEND_PATHS = {
    "sandbox": "chains.sandbox.SandboxBackend",
    "bitcoincore": "chains.bitcoincore.backend.BitcoinCoreBackend",
    "evm": "chains.evm.backend.EvmBackend",
}


@cache
def _backends() -> dict[str, Any]:
    configured: dict[str, str] = settings.CHAIN_BACKENDS or {}
    unknown = set(configured) - {asset.code for asset in all_assets()}
    if unknown:
        raise ImproperlyConfigured(f"CHAIN_BACKENDS names unknown payment codes: {sorted(unknown)}")
    instances: dict[str, Any] = {}
    chosen: dict[str, Any] = {}
    for asset in all_assets():
        name = configured.get(asset.code, "sandbox")
        path = BACKEND_PATHS.get(name, name)
        if path not in instances:
            try:
                instances[path] = import_string(path)()
            except ImportError as exc:
                raise ImproperlyConfigured(f"CHAIN_BACKENDS[{asset.code!r}]: cannot load {path}") from exc
        chosen[asset.code] = instances[path]
    return chosen


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "CHAIN_BACKENDS":
        _backends.cache_clear()


setting_changed.connect(_reset)


def get_backend(code: str) -> ChainBackend:
    return _backends()[get_asset(code).code]  # type: ignore[no-any-return]
