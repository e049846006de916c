"""The `tron` backend: trx and its TRC-20 tokens on a java-tron node (docs/tron.md).

Deposits work: addresses from `CHAIN_XPUBS["tron"]` (m/44'/195'/0'/0/i; the hot address will be
m/44'/195'/0'/1/0, as on EVM), block scans with receipts, finality at the solidified block, rechecks by id
(chains.tron.scanner), and the node's configuration (chains.tron.config). Payouts: one withdrawal a
transaction from the hot address, done at solidification, rebuilt only once expired and unknown
(chains.tron.payouts). Sweeps of deposit addresses to the hot address, energy lent or TRX burnt
(chains.tron.sweeps).
"""

from __future__ import annotations

from chains.backend import TAG_NONE, ChainBackend, XpubAddressesMixin
from chains.tron.config import tron_config
from chains.tron.payouts import TronPayouts
from chains.tron.resources import resource_energy_check
from chains.tron.scanner import TronScanner
from core.assets import get_asset

# The public explorers of the networks that have one; a private chain's link is the txid itself.
TESTNET_EXPLORERS = {
    "nile": "https://nile.tronscan.org/#/transaction/{txid}",
    "shasta": "https://shasta.tronscan.org/#/transaction/{txid}",
}


class TronBackend(TronScanner, TronPayouts, XpubAddressesMixin, ChainBackend):
    name = "tron"
    families = frozenset({"tron"})
    watches_addresses = False  # a block scan matches transfers against the deposit addresses itself
    max_outputs = 1  # an account chain: one payment per transaction
    sweeps = True  # deposits are swept to the hot address, which pays withdrawals
    has_gas_tank = True  # energy and bandwidth are paid in trx from the hot address
    tag_kind = TAG_NONE  # every deposit has its own address

    def check_config(self, code: str) -> None:
        super().check_config(code)
        tron_config(code)

    def check_resources(self, code: str) -> None:
        resource_energy_check(self.node(code), tron_config(code), self.hot_address(code))

    def explorer_url(self, code: str, txid: str) -> str:
        network = tron_config(code).network
        if network == "mainnet":
            return get_asset(code).explorer_link(txid)
        template = TESTNET_EXPLORERS.get(network)
        return template.format(txid=txid) if template else txid
