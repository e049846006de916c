"""The sandbox chain: a simulated chain per payment code, kept in the database (the default backend).

Blocks are mined by beat every `SANDBOX_BLOCK_SECONDS`, by `POST /api/sandbox/blocks` or by
`manage.py sandbox mine`; transactions enter the mempool from `POST /api/sandbox/deposits` (or the pay
page's simulator) and from withdrawals the gateway broadcasts. A transaction's confirmations are
tip - block + 1; its outcome (confirm, fail, freeze) applies once it is mined.
"""

from __future__ import annotations

import secrets
from decimal import Decimal

from django.conf import settings
from django.db.models import Max

from chains.base import FAILED, FROZEN, PENDING, ChainTransfer, XpubAddressesMixin
from payments.models import Deposit, SandboxBlock, SandboxTransaction

_FINAL_DEPOSITS = [Deposit.Status.CONFIRMED, Deposit.Status.FAILED, Deposit.Status.FROZEN]


def new_txid() -> str:
    return secrets.token_hex(32)


def tip_height(code: str) -> int:
    return SandboxBlock.objects.filter(code=code).aggregate(top=Max("height"))["top"] or 0


def confirmations(tx: SandboxTransaction, tip: int) -> int:
    return 0 if tx.block_height is None else tip - tx.block_height + 1


def _state(tx: SandboxTransaction) -> str:
    if tx.block_height is None or tx.outcome == SandboxTransaction.Outcome.CONFIRM:
        return PENDING
    return FAILED if tx.outcome == SandboxTransaction.Outcome.FAIL else FROZEN


class SandboxBackend(XpubAddressesMixin):
    name = "sandbox"

    def poll(self, code: str) -> list[ChainTransfer]:
        """Incoming transfers whose deposit is not final yet (new ones included)."""
        tip = tip_height(code)
        final = Deposit.objects.filter(code=code, status__in=_FINAL_DEPOSITS).values("txid")
        open_txs = SandboxTransaction.objects.filter(code=code, kind=SandboxTransaction.Kind.DEPOSIT).exclude(
            txid__in=final
        )
        return [self.transfer(tx, tip) for tx in open_txs.order_by("pk")]

    def transfer(self, tx: SandboxTransaction, tip: int) -> ChainTransfer:
        return ChainTransfer(
            code=tx.code,
            txid=tx.txid,
            output_index=0,
            address=tx.to_address,
            tag=tx.tag,
            amount=tx.amount,
            confirmations=confirmations(tx, tip),
            from_address=tx.from_address,
            state=_state(tx),
        )

    def send(self, code: str, *, reference: str, to: str, tag: str, amount: Decimal) -> str:
        """Broadcast once per reference (withdrawal uid): a retried task gets the same txid back."""
        existing = SandboxTransaction.objects.filter(
            kind=SandboxTransaction.Kind.WITHDRAWAL, reference=reference
        )
        found = existing.values_list("txid", flat=True).first()
        if found:
            return found
        tx = SandboxTransaction.objects.create(
            code=code,
            txid=new_txid(),
            kind=SandboxTransaction.Kind.WITHDRAWAL,
            to_address=to,
            tag=tag,
            amount=amount,
            reference=reference,
        )
        return tx.txid

    def status(self, code: str, txid: str) -> int | str:
        tx = SandboxTransaction.objects.get(code=code, txid=txid)
        state = _state(tx)
        return confirmations(tx, tip_height(code)) if state == PENDING else state

    def explorer_url(self, code: str, txid: str) -> str:
        return f"{settings.BASE_URL}/sandbox/tx/{txid}"
