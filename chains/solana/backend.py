"""The `solana` backend: sol on a Solana node's JSON-RPC (docs/solana.md).

Deposits work: one receiving address (`CHAIN_XPUBS["sol"]`, the hot wallet) and a Solana Pay `reference`
per invoice or static address (chains.solana.keys), the receiving address's finalized history read from a
cursor (chains.solana.scanner), and the node's configuration (chains.solana.config).
Payouts are not built yet: every payout waits with its reason (`SolanaPayoutsNotBuilt`), and production
refuses sol on this backend until they are (kassa.E033).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from django.core.checks import CheckMessage, Error

from chains.backend import TAG_REFERENCE, ChainBackend
from chains.base import FeeQuote, Outcome, Payment, PayoutHeld, SignedTx, Signer, TxStatus, UnsignedTx
from chains.payuri import solana_pay
from chains.solana import keys
from chains.solana.config import FAMILY, solana_config
from chains.solana.scanner import SolanaScanner
from chains.solana.units import from_lamports
from core.assets import get_asset

if TYPE_CHECKING:
    from payments.models import Company

EXPLORER = "https://explorer.solana.com/tx/{txid}"
DEPLOY_CHECK_ID = "kassa.E033"


class SolanaPayoutsNotBuilt(PayoutHeld):
    """Payouts of sol on the solana backend are not built yet: the withdrawals wait, nothing is sent."""

    kind = "solana_payouts_not_built"
    reason = "Solana payouts are not available yet"


class SolanaBackend(SolanaScanner, ChainBackend):
    name = "solana"
    families = frozenset({FAMILY})
    watches_addresses = False  # the receiving address's history is read; references route the payments
    max_outputs = 1
    sweeps = False  # every payment arrives at the receiving (hot) address itself
    tag_kind = TAG_REFERENCE

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]:
        return keys.receiving_address(), keys.reference(index)

    def hot_address(self, code: str) -> str:
        return keys.receiving_address()

    def payment_uri(self, code: str, address: str, amount: Decimal, tag: str | None) -> str:
        return solana_pay(address, amount, reference=tag)

    def explorer_url(self, code: str, txid: str) -> str:
        network = solana_config(code).network
        if network == "private":
            return txid  # a local validator's transactions are on no public explorer
        link = EXPLORER.format(txid=txid)
        return link if network == "mainnet" else f"{link}?cluster={network}"

    # --- configuration ---------------------------------------------------------------------------------

    def check_config(self, code: str) -> None:
        super().check_config(code)
        solana_config(code)
        keys.receiving_address()

    def receives_on_development_key(self, code: str) -> bool:
        return keys.uses_development_key()

    def deploy_checks(self, codes: list[str]) -> list[CheckMessage]:
        return [
            Error(
                f"{', '.join(codes)} runs on the solana backend, whose payouts are not built yet: "
                "withdrawals of it would wait forever.",
                hint="Keep sol off CHAIN_BACKENDS in production until Solana payouts land (docs/solana.md).",
                id=DEPLOY_CHECK_ID,
            )
        ]

    # --- payouts: not built yet ------------------------------------------------------------------------

    def quote_fee(self, code: str) -> FeeQuote:
        raise SolanaPayoutsNotBuilt(f"{get_asset(code).label} payouts are not built yet")

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        raise SolanaPayoutsNotBuilt("payouts are not built yet")

    def signer(self, code: str) -> Signer:
        raise SolanaPayoutsNotBuilt("payouts are not built yet")

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        raise SolanaPayoutsNotBuilt("payouts are not built yet")

    def tx_status(self, code: str, txid: str) -> TxStatus:
        return self.deposit_status(code, txid)

    def spendable(self, code: str) -> Decimal:
        return from_lamports(self.node(code).balance(keys.receiving_address()))

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None
