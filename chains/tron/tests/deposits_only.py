"""The tron backend as the deposit tests configure it (CHAIN_BACKENDS names this class): its payout side
is not written yet, so the deployment checks refuse the backend itself; here those methods refuse every
call, and everything else is the real backend."""

from __future__ import annotations

from decimal import Decimal
from typing import NoReturn

from chains.base import FeeQuote, Outcome, Payment, SignedTx, Signer, TxStatus, UnsignedTx
from chains.tron.backend import TronBackend

PATH = "chains.tron.tests.deposits_only.TronDepositsOnly"


def _not_yet() -> NoReturn:
    raise NotImplementedError("TRON payouts are not written yet")


class TronDepositsOnly(TronBackend):
    def quote_fee(self, code: str) -> FeeQuote:
        _not_yet()

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        _not_yet()

    def signer(self, code: str) -> Signer:
        _not_yet()

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        _not_yet()

    def tx_status(self, code: str, txid: str) -> TxStatus:
        _not_yet()

    def spendable(self, code: str) -> Decimal:
        _not_yet()

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        _not_yet()

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        _not_yet()
