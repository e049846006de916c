"""The chain backend contract (docs/architecture.md): the base class every backend subclasses, and the
registry, the one place a backend is named.

A backend declares what it can do as class attributes (its capabilities), implements every abstract
method, and overrides the concrete defaults it needs; callers call its methods directly, never probe for
them. Which backend serves which payment code is the `CHAIN_BACKENDS` setting; every code runs on the
sandbox chain unless configured otherwise. A backend that is not complete (an abstract method left) is
refused with the methods it lacks, by the deployment checks (chains.checks), never at request time.

Adding a chain: a package under chains/ whose backend subclasses `ChainBackend`, and one line in
`BACKEND_PATHS` (chains/tron and chains/near sweep per-deposit addresses; chains/ton and chains/solana
tell deposits apart by a tag).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from django.conf import settings
from django.core.checks import CheckMessage
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from chains.base import (
    BlockRef,
    ChainTransfer,
    FeeQuote,
    Outcome,
    Payment,
    ScanResult,
    SignedTx,
    Signer,
    TransferKey,
    TxStatus,
    UnsignedTx,
)
from chains.derivation import derive_address, receives_on_development_key, ton_deposit_address
from chains.payuri import asset_payment_uri
from core.assets import all_assets, get_asset
from core.offer import SANDBOX_BACKEND, backend_name

if TYPE_CHECKING:
    from payments.models import Company

# How a payment is told apart at a shared address: it is not (every deposit has its own address), by a
# memo field of the transaction, or by its comment (TON's text).
TAG_NONE, TAG_MEMO, TAG_COMMENT = "none", "memo", "comment"
# Solana Pay: a reference key the wallet adds from the pay URI; the customer never types it.
TAG_REFERENCE = "reference"


class BackendMismatch(ImproperlyConfigured):
    """A code given to a backend that cannot serve it (another family, a tag it cannot read): CHAIN_BACKENDS
    is what to fix, not the node's settings."""


class ChainBackend(ABC):
    """Deposits (addresses, watching, scanning, the settled watch) and payouts of the codes it serves.

    Finality: a deposit is credited at its asset's `confirmations`, unless the backend reports the chain's
    own signal on each transfer it scans or rechecks (`ChainTransfer.final`, e.g. TRON's solidified block).

    Payouts: plan -> sign -> store -> broadcast -> monitor (withdrawals.payouts drives it). `build` plans
    one transaction paying every payment (raises InsufficientFunds or FeeOverCap), the `Signer` signs it,
    the caller stores the signed bytes and txid in one commit, and only then `broadcast` sends them; a
    retry sends the same bytes again, never a rebuilt transaction.
    """

    name: ClassVar[str] = ""

    # --- capabilities ----------------------------------------------------------------------------------

    families: ClassVar[frozenset[str] | None] = None  # the asset families it can serve; None: any
    watches_addresses: ClassVar[bool] = False  # the node must be told the deposit addresses (ensure_watched)
    max_outputs: ClassVar[int] = 1  # payments per payout transaction
    sweeps: ClassVar[bool] = False  # deposits are swept from their address to a hot address
    has_gas_tank: ClassVar[bool] = False  # payouts' fees come from the hot address's native coin (gas_tank)
    tag_kind: ClassVar[str] = TAG_NONE  # TAG_NONE, TAG_MEMO, TAG_COMMENT or TAG_REFERENCE

    # --- deposits --------------------------------------------------------------------------------------

    @abstractmethod
    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]: ...

    @abstractmethod
    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult: ...

    @abstractmethod
    def tip(self, code: str) -> BlockRef:
        """The node's best block now."""

    def final_height(self, code: str) -> int | None:
        """The highest block the chain's own finality signal has made final (TRON: the solidified block),
        for the operator; None where the asset's confirmations decide instead."""
        return None

    @abstractmethod
    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        """A cursor from which the next scan reports everything after block `height` (a rescan)."""

    @abstractmethod
    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        """The current state of open transfers the scan did not mention (DROPPED when gone for good)."""

    @abstractmethod
    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        """The block is still in the node's best chain (the settled watch: what it holds is still mined)."""

    @abstractmethod
    def deposit_status(self, code: str, txid: str) -> TxStatus:
        """An incoming transaction as the chain sees it now, as `tx_status` tells a sent one: mined (with
        its block), waiting in the mempool, or neither (known=False, or confirmations < 0: a conflict won)."""

    @abstractmethod
    def explorer_url(self, code: str, txid: str) -> str: ...

    def ensure_watched(self, code: str, upto_index: int) -> int:
        """Make the node watch every deposit address up to `upto_index`; returns the index watched up to.
        Called only where `watches_addresses`; a node that sees every address has nothing to do."""
        return upto_index

    def scan_codes(self, code: str) -> list[str]:
        """The codes scanned together with `code` (one cycle, one cursor); the first leads."""
        return [code]

    # --- payouts ---------------------------------------------------------------------------------------

    @abstractmethod
    def quote_fee(self, code: str) -> FeeQuote: ...

    @abstractmethod
    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx: ...

    @abstractmethod
    def signer(self, code: str) -> Signer: ...

    @abstractmethod
    def broadcast(self, code: str, tx: SignedTx) -> Outcome: ...

    @abstractmethod
    def tx_status(self, code: str, txid: str) -> TxStatus: ...

    @abstractmethod
    def spendable(self, code: str) -> Decimal: ...

    @abstractmethod
    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        """A replacement of a stuck transaction (RBF: the same payments, a higher fee), signed; None where
        the chain or node cannot replace it."""

    @abstractmethod
    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        """A child of a stuck transaction (CPFP): spends its change back to the payout wallet and pays
        enough that the two together pay `fee`, signed; None where it cannot (no change, or the parent
        already pays that rate)."""

    def expired(self, code: str, raw: str) -> bool:
        """The stored transaction `raw` can no longer be included in any block (TRON: the head is past its
        expiration). Only then, and only when the node does not have it, is a payout rebuilt; chains whose
        transactions never expire (a nonce or inputs keep them valid) say False."""
        return False

    def release(self, code: str, raw: str) -> None:
        """A stored transaction was abandoned before it was sent (account chains: its nonce stays unused)."""
        return None

    def gas_tank(self, code: str) -> Decimal | None:
        """Where `has_gas_tank`: the hot address's native coin, which pays every payout's gas; else None."""
        return None

    def hot_address(self, code: str) -> str:
        """Where payouts leave from, for the operator to fund; "" where the node's wallet pays."""
        return ""

    def check_resources(self, code: str) -> None:
        """Raise or resolve the alerts about what the payouts and sweeps of `code` draw on beside the hot
        wallet (TRON: the energy the resource account lends); at each reading of the payout wallet
        (chains.wallets). Nothing by default."""
        return None

    def fee_coin(self, code: str) -> str:
        """The code of the coin the network fees of `code` are paid in (a token's: its chain's coin)."""
        asset = get_asset(code)
        return asset.fee_coin or asset.code

    # --- the pay page ----------------------------------------------------------------------------------

    def payment_uri(self, code: str, address: str, amount: Decimal, tag: str | None) -> str:
        """The URI a wallet opens to pay `amount` of `code` to `address` (and `tag`): by default the asset's
        own standard on its mainnet (chains.payuri)."""
        return asset_payment_uri(get_asset(code), address, amount, tag)

    # --- configuration ---------------------------------------------------------------------------------

    def check_config(self, code: str) -> None:
        """Raise ImproperlyConfigured when `code` cannot run on this backend as configured (its node's
        settings included); a backend adds its own checks after these."""
        asset = get_asset(code)
        if self.families is not None and asset.family not in self.families:
            raise BackendMismatch(
                f"the {self.name} backend serves the {', '.join(sorted(self.families))} families, "
                f"not {asset.family}"
            )
        if asset.tag_required and self.tag_kind == TAG_NONE:
            raise BackendMismatch(f"{code} payments carry a tag, which the {self.name} backend cannot read")

    def deploy_checks(self, codes: list[str]) -> list[CheckMessage]:
        """This backend's own deployment checks, for the real `codes` it serves."""
        return []

    def shared_address(self, code: str) -> str | None:
        """The one address every deposit of `code` is paid to, told apart by its tag (TON's comment,
        Solana's reference): the receiving wallet of a tagged backend. None where each deposit has its own
        address. A payment there whose tag names nothing is an unknown tag, never an unknown address."""
        return self.hot_address(code) if self.tag_kind in (TAG_COMMENT, TAG_REFERENCE) else None

    def deposit_key_setting(self, code: str) -> str:
        """The setting holding the public key deposits of `code` are received on (for the operator's hint):
        by default its family's `CHAIN_XPUBS` entry (the sandbox's TON: `TON_DEPOSIT_ADDRESS`)."""
        family = get_asset(code).family
        return "TON_DEPOSIT_ADDRESS" if family == "ton" else f'CHAIN_XPUBS["{family}"]'

    def receives_on_development_key(self, code: str) -> bool:
        """Deposits of `code` would reach the public development key (anyone can spend them): production
        refuses that (kassa.E005). ImproperlyConfigured when the key is malformed."""
        return receives_on_development_key(get_asset(code).family)


class XpubAddressesMixin:
    """Deposit addresses derived from the configured extended public keys (chains.derivation)."""

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]:
        return derive_address(code, index)

    def shared_address(self, code: str) -> str | None:
        """TON's one deposit address (TON_DEPOSIT_ADDRESS), which every comment shares."""
        return ton_deposit_address() if get_asset(code).family == "ton" else None


BACKEND_PATHS = {
    SANDBOX_BACKEND: "chains.sandbox.SandboxBackend",
    "bitcoincore": "chains.bitcoincore.backend.BitcoinCoreBackend",
    "evm": "chains.evm.backend.EvmBackend",
    "tron": "chains.tron.backend.TronBackend",
    "ton": "chains.ton.backend.TonBackend",
    "solana": "chains.solana.backend.SolanaBackend",
    "near": "chains.near.backend.NearBackend",
}


def missing_methods(cls: type) -> list[str]:
    """The abstract methods of the contract a backend class does not implement yet, sorted."""
    return sorted(getattr(cls, "__abstractmethods__", ()))


def _load(code: str, path: str) -> ChainBackend:
    try:
        cls = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(f"CHAIN_BACKENDS[{code!r}]: cannot load {path}") from exc
    if not (inspect.isclass(cls) and issubclass(cls, ChainBackend)):
        raise ImproperlyConfigured(f"CHAIN_BACKENDS[{code!r}]: {path} is not a chains.backend.ChainBackend")
    missing = missing_methods(cls)
    if missing:
        raise ImproperlyConfigured(
            f"CHAIN_BACKENDS[{code!r}]: the {cls.name or path} backend is not complete yet; "
            f"it lacks {', '.join(missing)}"
        )
    return cls()


@cache
def _backends() -> dict[str, ChainBackend]:
    configured: dict[str, str] = settings.CHAIN_BACKENDS or {}
    unknown = set(configured) - {asset.code for asset in all_assets()}
    if unknown:
        raise ImproperlyConfigured(f"CHAIN_BACKENDS names unknown payment codes: {sorted(unknown)}")
    instances: dict[str, ChainBackend] = {}
    chosen: dict[str, ChainBackend] = {}
    for asset in all_assets():
        name = backend_name(asset.code)  # the one reading of CHAIN_BACKENDS, core.offer's too
        path = BACKEND_PATHS.get(name, name)
        if path not in instances:
            instances[path] = _load(asset.code, path)
        chosen[asset.code] = instances[path]
    return chosen


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "CHAIN_BACKENDS":
        _backends.cache_clear()


setting_changed.connect(_reset)


def get_backend(code: str) -> ChainBackend:
    return _backends()[get_asset(code).code]
