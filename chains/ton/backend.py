"""The `ton` backend: Toncoin on toncenter's HTTP API v2 (toncenter.com, or a self-hosted ton-http-api;
docs/ton.md).

Deposits work: every payment goes to the house wallet (a wallet v4R2 of `CHAIN_XPUBS["ton"]`,
chains.ton.keys), shown non-bounceable; each invoice and static address has its own comment (its tag), in a
`ton://transfer/<address>?amount=<nanotons>&text=<comment>` link. The scanner reads the wallet's
transactions from a cursor (lt, hash), each one final once listed (chains.ton.scanner). A payment whose
comment matches nothing is recorded as an unrouted deposit.

Payouts leave from the same wallet, one external message at a time (chains.ton.payouts): planned, signed
by the TON signer after it read the message (chains.ton.signer, chains.ton.policy), stored, then sent; a
message past its valid_until whose seqno was never used is rebuilt once, one whose seqno was used never. A
payment that bounced back reopens its withdrawal for a person (withdrawals.bounces).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from pytoniq_core import Address

from chains.backend import TAG_COMMENT, ChainBackend
from chains.derivation import ton_comment
from chains.ton.keys import SETTING, house_display, house_raw, receives_on_development_key
from chains.ton.payouts import TonPayouts
from chains.ton.scanner import TonScanner

if TYPE_CHECKING:
    from payments.models import Company

EXPLORERS = {"mainnet": "https://tonviewer.com/transaction/{txid}"}


class TonBackend(TonScanner, TonPayouts, ChainBackend):
    name = "ton"
    families = frozenset({"ton"})
    watches_addresses = False  # every payment reaches one wallet, read whole
    max_outputs = 1
    sweeps = False  # payments stay in the house wallet, which pays withdrawals
    tag_kind = TAG_COMMENT

    # --- deposits --------------------------------------------------------------------------------------

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]:
        """The house wallet, non-bounceable, and the comment of deposit `index`: its decimal digits and a
        check digit (chains.derivation.ton_comment, as the sandbox's TON), which every wallet's comment
        field carries and no single typo turns into another invoice's."""
        return house_display(), ton_comment(index)

    def hot_address(self, code: str) -> str:
        return house_display()

    # payment_uri: the asset's own rule (chains.payuri.ton_transfer) on the stored, non-bounceable address.

    def explorer_url(self, code: str, txid: str) -> str:
        template = EXPLORERS.get(self.config(code).network)
        return template.format(txid=txid) if template else txid

    # --- configuration ---------------------------------------------------------------------------------

    def check_config(self, code: str) -> None:
        super().check_config(code)
        self.config(code)
        configured = settings.TON_DEPOSIT_ADDRESS
        if configured and _raw(configured) != house_raw():
            raise ImproperlyConfigured(
                f"TON_DEPOSIT_ADDRESS is the sandbox's; the ton backend receives at the wallet of {SETTING} "
                f"({house_display()}): leave TON_DEPOSIT_ADDRESS empty"
            )

    def deposit_key_setting(self, code: str) -> str:
        return SETTING

    def receives_on_development_key(self, code: str) -> bool:
        return receives_on_development_key()


def _raw(address: str) -> str:
    try:
        parsed = Address(address.strip())
    except Exception:  # pytoniq raises several kinds on malformed text: then it is no house address
        return address
    return f"{parsed.wc}:{parsed.hash_part.hex()}"
