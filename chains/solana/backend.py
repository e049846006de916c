"""The `solana` backend: sol on a Solana node's JSON-RPC (docs/solana.md).

Deposits work: one receiving address (`CHAIN_XPUBS["sol"]`, the hot wallet) and a Solana Pay `reference`
per invoice or static address (chains.solana.keys), the receiving address's finalized history read from a
cursor (chains.solana.scanner), and the node's configuration (chains.solana.config).
Payouts: one System transfer a withdrawal from the hot address, signed by the seed's Solana key
(chains.solana.payouts, chains.solana.signer).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from chains.backend import TAG_REFERENCE, ChainBackend
from chains.payuri import solana_pay
from chains.solana import keys
from chains.solana.config import FAMILY, solana_config
from chains.solana.payouts import SolanaPayouts
from chains.solana.scanner import SolanaScanner

if TYPE_CHECKING:
    from payments.models import Company

EXPLORER = "https://explorer.solana.com/tx/{txid}"


class SolanaBackend(SolanaScanner, SolanaPayouts, ChainBackend):
    name = "solana"
    families = frozenset({FAMILY})
    watches_addresses = False  # the receiving address's history is read; references route the payments
    max_outputs = 1
    sweeps = False  # every payment arrives at the receiving (hot) address itself
    tag_kind = TAG_REFERENCE

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]:
        return keys.receiving_address(), keys.reference(index)

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
