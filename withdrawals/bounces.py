"""Payouts that bounced (TON): the recipient's account sent the payment back, so nothing was paid.

A bounceable TON message to a wallet that is not deployed yet (or to an account that cannot take it) is
refused by that account and comes back to the house wallet, less the network's fees. The ton backend
reports it (`TxStatus.bounced`, decided once the recipient's transaction is listed; never `done` before);
the payout monitor then calls `close_bounced`: the transaction is closed (FAILED, with `BOUNCED` in its
last_error, its whole cost booked to the house account), and each of its withdrawals is reopened
(withdrawals.services.withdrawal_bounced): processing without txid, held for an approval with the reason
shown, and a `payout_bounced` alert goes to a person.

The merchant then approves it (withdrawals.approvals.withdrawal_approve): the next plan sends it again,
non-bounceable (`resend_without_bounce`), once: a non-bounceable payment cannot bounce, it stays with the
recipient's address, deployed or not. Or cancels it (withdrawal_cancel): rejected, its hold returned to the
balance with the rejected webhook. Either way the alert resolves (`bounce_decided`). The signer signs the
second message of the withdrawal only because the first one came back (it asks the chain itself:
chains.ton.signer).

A refund of an unrouted deposit (the house's own payout, no merchant to approve it) that bounced is
rejected at once: the unrouted deposit is open again, for the operator to refund elsewhere or assign
(chains.unrouted), whose `deposit_unrouted` alert counts it again.
"""

from __future__ import annotations

import logging

from django.db import transaction

from alerts.services import alert_raise, alert_resolve
from chains.base import TxStatus
from chains.house import house_book_network_fee
from chains.models import ChainTx, ChainTxStatus
from withdrawals import services
from withdrawals.models import Withdrawal

logger = logging.getLogger("withdrawals.payouts")

BOUNCED = "bounced"  # the start of the last_error of a payout whose payment came back
ALERT_KIND = "payout_bounced"
REASON = (
    "The recipient's wallet is not active and bounced the payment: approve to send it non-bounceable, "
    "or cancel."
)
HOUSE_REASON = "The refund bounced: the sender's account sent it back. The deposit is open again."


def resend_without_bounce(withdrawal: Withdrawal) -> bool:
    """Its payment bounced once: it is sent again (once approved) non-bounceable."""
    return withdrawal.chain_links.filter(
        chain_tx__status=ChainTxStatus.FAILED, chain_tx__last_error__startswith=BOUNCED
    ).exists()


@transaction.atomic
def close_bounced(code: str, chain_tx: ChainTx, status: TxStatus) -> None:
    """The payment of `chain_tx` came back: closed, its cost booked, its withdrawals reopened and held for a
    person, who is alerted."""
    chain_tx = ChainTx.objects.select_for_update().get(pk=chain_tx.pk)
    if chain_tx.status != ChainTxStatus.BROADCAST:
        return  # closed by another monitor first
    chain_tx.status = ChainTxStatus.FAILED
    chain_tx.last_error = f"{BOUNCED}: the recipient's account sent the payment back"
    if status.fee_paid is not None:
        chain_tx.fee_paid = status.fee_paid
    if status.block is not None:
        chain_tx.block_height, chain_tx.block_hash = status.block.height, status.block.hash
    chain_tx.save(
        update_fields=["status", "last_error", "fee_paid", "block_height", "block_hash", "updated_at"]
    )
    house_book_network_fee(chain_tx)
    links = chain_tx.withdrawal_links.order_by("withdrawal_id")
    uids = []
    for uid, company_id in links.values_list("withdrawal__uid", "withdrawal__company_id"):
        if company_id is None:  # the house's refund of an unrouted deposit: back to the operator
            services.withdrawal_reject(uid=uid, reason=HOUSE_REASON)
        else:
            services.withdrawal_bounced(uid=uid, reason=REASON)
            uids.append(uid)
    if uids:
        alert_raise(
            kind=ALERT_KIND,
            key=f"{code}:{chain_tx.txid}",
            message=f"{code} payout {chain_tx.txid} bounced: the recipient's wallet is not active. "
            f"Withdrawal(s) {', '.join(uids)} wait for an approval to be sent non-bounceable, or a cancel.",
        )
    logger.warning("%s: payout %s bounced; a person decides what comes next", code, chain_tx.txid)


def bounce_decided(withdrawal: Withdrawal) -> None:
    """A person approved or cancelled a bounced withdrawal: its bounce alerts are resolved."""
    bounced = withdrawal.chain_links.filter(
        chain_tx__status=ChainTxStatus.FAILED, chain_tx__last_error__startswith=BOUNCED
    ).values_list("chain_tx__txid", flat=True)
    for txid in bounced:
        alert_resolve(kind=ALERT_KIND, key=f"{withdrawal.code}:{txid}")
