"""The sandbox chain: a simulated chain per payment code, kept in the database (the default backend).

Blocks are mined by beat every `SANDBOX_BLOCK_SECONDS`, by `POST /api/sandbox/blocks` or by
`manage.py sandbox mine`; transactions enter the mempool from `POST /api/sandbox/deposits` (or the pay
page's simulator) and from withdrawals the gateway broadcasts. A transaction's confirmations are
tip - block + 1; its outcome (confirm, fail, freeze) applies once it is mined.
"""

from __future__ import annotations

import json
import secrets
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max, Q

from chains.backend import TAG_MEMO, ChainBackend, XpubAddressesMixin
from chains.base import (
    DROPPED,
    FAILED,
    FROZEN,
    PENDING,
    BlockRef,
    ChainTransfer,
    FeeQuote,
    Outcome,
    Payment,
    ScanResult,
    SignedTx,
    TransferKey,
    TxStatus,
    UnsignedTx,
)
from core.assets import get_asset
from payments.models import Deposit, SandboxBlock, SandboxTransaction

_FINAL_DEPOSITS = [
    Deposit.Status.CONFIRMED,
    Deposit.Status.FAILED,
    Deposit.Status.FROZEN,
    Deposit.Status.DROPPED,
]


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


class SandboxBackend(XpubAddressesMixin, ChainBackend):
    """Every code, any family; it sees every address (nothing to watch) and keeps a transfer's tag."""

    name = "sandbox"
    tag_kind = TAG_MEMO

    def scan(self, code: str, cursor: dict[str, object] | None) -> ScanResult:
        """The incoming transfers in the mempool or mined since the cursor (the tip the last scan saw), as a
        node's listsinceblock; the first scan reports every one whose deposit is not final. Deposits still
        open are followed by the pipeline's recheck. The sandbox never reorganises."""
        tip = tip_height(code)
        since = (cursor or {}).get("height")
        if isinstance(since, int):
            recent = SandboxTransaction.objects.filter(
                code=code, kind=SandboxTransaction.Kind.DEPOSIT
            ).filter(Q(block_height__isnull=True) | Q(block_height__gt=since))
            transfers = [self.transfer(tx, tip) for tx in recent.order_by("pk")]
        else:
            transfers = self._open(code, tip)
        return ScanResult(
            transfers=transfers, dropped=[], tip=BlockRef(tip, str(tip)), cursor={"height": tip}
        )

    def tip(self, code: str) -> BlockRef:
        height = tip_height(code)
        return BlockRef(height, str(height))

    def cursor_at(self, code: str, height: int) -> dict[str, object]:
        return {"height": height}

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        tip = tip_height(code)
        found = {
            tx.txid: tx
            for tx in SandboxTransaction.objects.filter(
                code=code, kind=SandboxTransaction.Kind.DEPOSIT, txid__in=[key.txid for key in keys]
            )
        }
        return [
            self.transfer(found[key.txid], tip)
            if key.txid in found
            else ChainTransfer(key.code, key.txid, key.output_index, "", "", Decimal(1), 0, state=DROPPED)
            for key in keys
        ]

    def _open(self, code: str, tip: int) -> list[ChainTransfer]:
        """Incoming transfers whose deposit is not final yet (new ones included)."""
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
            block=None if tx.block_height is None else BlockRef(tx.block_height, str(tx.block_height)),
        )

    def explorer_url(self, code: str, txid: str) -> str:
        return f"{settings.BASE_URL}/sandbox/tx/{txid}"

    # --- payouts: one withdrawal per transaction (max_outputs 1), "signed" by no one (there is no key) ----

    def quote_fee(self, code: str) -> FeeQuote:
        return FeeQuote(rate=get_asset(code).network_fee, unit=code, source="fixed")

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        [payment] = payments
        payload = json.dumps(
            {"key": payment.key, "to": payment.to, "tag": payment.tag, "amount": str(payment.amount)}
        )
        return UnsignedTx(code=code, payload=payload, payments=(payment,), fee=fee.rate)

    def signer(self, code: str) -> SandboxSigner:
        return SandboxSigner()

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        """Into the sandbox mempool once per txid (and per withdrawal): a re-send is already known."""
        known = SandboxTransaction.objects.filter(txid=tx.txid).values_list("block_height", flat=True)
        if known.exists():
            return Outcome.ALREADY_KNOWN if known.first() is None else Outcome.ALREADY_MINED
        payment = json.loads(tx.raw)
        try:
            with transaction.atomic():
                SandboxTransaction.objects.create(
                    code=code,
                    txid=tx.txid,
                    kind=SandboxTransaction.Kind.WITHDRAWAL,
                    to_address=payment["to"],
                    tag=payment["tag"],
                    amount=Decimal(payment["amount"]),
                    reference=payment["key"],
                )
        except IntegrityError:
            return Outcome.CONFLICT  # another transaction already pays this withdrawal
        return Outcome.ACCEPTED

    def tx_status(self, code: str, txid: str) -> TxStatus:
        tx = SandboxTransaction.objects.filter(code=code, txid=txid).first()
        if tx is None:
            return TxStatus(confirmations=0, known=False)
        state = _state(tx)
        block = None if tx.block_height is None else BlockRef(tx.block_height, str(tx.block_height))
        if state != PENDING:
            return TxStatus(confirmations=0, known=True, block=block, failed=True, failure=state)
        return TxStatus(confirmations=confirmations(tx, tip_height(code)), known=True, block=block)

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        return self.tx_status(code, txid)

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        return True  # the sandbox never reorganises

    def spendable(self, code: str) -> Decimal:
        return Decimal("Infinity")  # the sandbox pays whatever the ledger allows

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None  # sandbox transactions are never stuck

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None


class SandboxSigner:
    def sign(self, tx: UnsignedTx) -> SignedTx:
        return SignedTx(txid=new_txid(), raw=tx.payload, fee=tx.fee)
