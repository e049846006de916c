"""The `near` backend: NEAR on a node's JSON-RPC (docs/near.md).

- Deposits: each invoice gets a fresh implicit account from the signer's key pool (chains.near.pool);
  final blocks are scanned for receipts paying them, decided by each receipt's own outcome
  (chains.near.scanner); credited at finality, never at a count.
- Sweeps: a funded deposit account is deleted into the hot account (one DeleteAccount, its beneficiary
  the hot account), signed by the signer, stored before it is sent (chains.near.sweeps).
- Payouts: one Transfer a transaction from the hot account, nonce from its access key, plan -> sign ->
  store -> send; rebuilt only when its block hash has expired and the node does not know it
  (chains.near.payouts).
"""

from __future__ import annotations

from typing import Any

from chains.backend import TAG_NONE, ChainBackend
from chains.base import ScanResult
from chains.near.config import near_config, uses_development_key
from chains.near.payouts import NearPayouts
from chains.near.pool import pool_account, reconcile, top_up
from chains.near.scanner import NearScanner
from core.assets import get_asset
from payments.models import Company

EXPLORERS = {
    "mainnet": "https://nearblocks.io/hash/{txid}",
    "testnet": "https://testnet.nearblocks.io/hash/{txid}",
}


class NearBackend(NearScanner, NearPayouts, ChainBackend):
    name = "near"
    families = frozenset({"near"})
    watches_addresses = True  # "watched up to n": the pool holds the keys up to n (chains.near.pool)
    max_outputs = 1  # one Transfer a transaction
    sweeps = True  # deposit accounts are deleted into the hot account
    has_gas_tank = False  # the hot account pays its own gas in the coin it pays out
    tag_kind = TAG_NONE  # every deposit has its own account

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]:
        return pool_account(code, index), None

    def ensure_watched(self, code: str, upto_index: int) -> int:
        return top_up(code, upto_index)

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        reconcile(code)  # a change of seed: the next cycle exports the new seed's pool
        return super().scan(code, cursor)

    def check_config(self, code: str) -> None:
        super().check_config(code)
        near_config(code)  # its node, and the hot key of CHAIN_XPUBS["near"] (an extended key is refused)

    def hot_address(self, code: str) -> str:
        return near_config(code).account

    def deposit_key_setting(self, code: str) -> str:
        return 'CHAIN_XPUBS["near"]'

    def receives_on_development_key(self, code: str) -> bool:
        return uses_development_key()

    def explorer_url(self, code: str, txid: str) -> str:
        template = EXPLORERS.get(near_config(code).network)
        if template is None:
            return txid
        return template.format(txid=txid) if get_asset(code) else txid
