"""The `tron` backend: trx and its TRC-20 tokens on a TRON node. A skeleton, not a working backend yet.

It declares what the chain is and does (its capabilities) and implements none of the contract's abstract
methods, so `CHAIN_BACKENDS={"trx": "tron"}` is refused by the deployment checks, naming every method it
still lacks (chains/tests/test_backend_contract.py). Filling them in, and its node's configuration and
checks in this package, is all a working TRON backend adds: it is already in the registry.
"""

from __future__ import annotations

from chains.backend import TAG_NONE, ChainBackend


class TronBackend(ChainBackend):
    name = "tron"
    families = frozenset({"tron"})
    watches_addresses = False  # a block scan matches transfers against the deposit addresses itself
    max_outputs = 1  # an account chain: one payment per transaction
    sweeps = True  # deposits are swept to the hot address, which pays withdrawals
    has_gas_tank = True  # energy and bandwidth are paid in trx from the hot address
    tag_kind = TAG_NONE  # every deposit has its own address
