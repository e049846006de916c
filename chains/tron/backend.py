"""The `tron` backend: trx and its TRC-20 tokens on a java-tron node (docs/tron.md).

Deposits work: addresses from `CHAIN_XPUBS["tron"]` (m/44'/195'/0'/0/i; the hot address will be
m/44'/195'/0'/1/0, as on EVM), block scans with receipts, finality at the solidified block, rechecks by id
(chains.tron.scanner), and the node's configuration (chains.tron.config). The payout side (quote_fee,
build, signer, broadcast, tx_status, spendable, bump, child) is not written yet: those abstract methods
are left, so `CHAIN_BACKENDS={"trx": "tron"}` is still refused by the deployment checks, naming them
(chains/tests/test_backend_contract.py).
"""

from __future__ import annotations

from chains.backend import TAG_NONE, ChainBackend, XpubAddressesMixin
from chains.tron.config import tron_config
from chains.tron.scanner import TronScanner
from core.assets import get_asset

# The public explorers of the networks that have one; a private chain's link is the txid itself.
TESTNET_EXPLORERS = {
    "nile": "https://nile.tronscan.org/#/transaction/{txid}",
    "shasta": "https://shasta.tronscan.org/#/transaction/{txid}",
}


class TronBackend(TronScanner, XpubAddressesMixin, ChainBackend):
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

    def explorer_url(self, code: str, txid: str) -> str:
        network = tron_config(code).network
        if network == "mainnet":
            return get_asset(code).explorer_link(txid)
        template = TESTNET_EXPLORERS.get(network)
        return template.format(txid=txid) if template else txid
