"""The withdrawals' answers to chains' questions about payouts (chains.payout_book), registered at start-up
by WithdrawalsConfig.ready."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Count

from chains.models import ChainTxStatus
from chains.payout_book import PayoutFacts
from core.fields import MoneySum
from withdrawals.bounces import resend_without_bounce
from withdrawals.models import Withdrawal

REFERENCE_PREFIX = "withdrawal:"


class WithdrawalBook:
    def waiting_total(self, code: str) -> Decimal:
        waiting = Withdrawal.objects.filter(code=code, status=Withdrawal.Status.PROCESSING, txid="")
        return waiting.aggregate(total=MoneySum("amount"))["total"] or Decimal(0)

    def done(self, code: str) -> tuple[int, Decimal]:
        """One query: the count and the exact sum of fees, not every done withdrawal's fee read back."""
        done = Withdrawal.objects.filter(code=code, status=Withdrawal.Status.DONE)
        row = done.aggregate(count=Count("pk"), fees=MoneySum("fee"))
        return row["count"], row["fees"] or Decimal(0)

    def payout(self, code: str, reference: str, nonce: int) -> PayoutFacts | None:
        withdrawal = Withdrawal.objects.filter(
            uid=reference.removeprefix(REFERENCE_PREFIX), code=code
        ).first()
        if withdrawal is None or withdrawal.reference != reference:
            return None
        live = withdrawal.chain_links.filter(
            chain_tx__status__in=[ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST, ChainTxStatus.CONFIRMED]
        )
        return PayoutFacts(
            uid=str(withdrawal.uid),
            to_address=withdrawal.to_address,
            amount=withdrawal.amount,
            processing=withdrawal.status == Withdrawal.Status.PROCESSING,
            status=withdrawal.status,
            paid_by_other_nonce=live.exclude(chain_tx__nonce=nonce).exists(),
            tag=withdrawal.tag,
            bounced=resend_without_bounce(withdrawal) and withdrawal.approved_at is not None,
        )
