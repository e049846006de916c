"""Payouts whose transaction expired unmined (TRON): closed, and their withdrawals planned again once.

withdrawals.payouts' monitor asks `expired_unmined` of every open payout and `close_expired` for those
that are; the next plan of that run pays their withdrawals with one new transaction. Between the
expiration and that close (the signer's margin for clocks, a minute on TRON) the node refuses the stored
bytes as expired (`Outcome.EXPIRED`): no alert, since nothing is for a person to do.
"""

from __future__ import annotations

import logging

from django.db import transaction

from alerts.services import alert_resolve
from chains.backend import ChainBackend
from chains.base import Outcome
from chains.models import ChainTx, ChainTxStatus
from withdrawals import services

logger = logging.getLogger("withdrawals.payouts")


def expired_unmined(backend: ChainBackend, chain_tx: ChainTx) -> bool:
    """Dead for good: past its expiration (backends whose transactions expire) and unknown to the node."""
    if chain_tx.kind != ChainTx.Kind.PAYOUT or not backend.expired(chain_tx.code, chain_tx.raw):
        return False
    return not backend.tx_status(chain_tx.code, chain_tx.txid).known


@transaction.atomic
def close_expired(code: str, chain_tx: ChainTx) -> None:
    """A transaction that expired unmined (TRON) can never be included, unlike an EVM one, which its nonce
    keeps valid until it is mined or replaced: it is closed, and its withdrawals are due again, so the next
    plan pays them with one new transaction (stored before it is sent, as every plan). Closed, it is never
    rebuilt again; the signer signs the new one only because the old one expired unknown to the node."""
    chain_tx = ChainTx.objects.select_for_update().get(pk=chain_tx.pk)
    if chain_tx.status not in (ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST):
        return  # another monitor closed it first
    chain_tx.status = ChainTxStatus.FAILED
    chain_tx.last_error = "expired unmined: its withdrawals are planned again"
    chain_tx.save(update_fields=["status", "last_error", "updated_at"])
    for uid in chain_tx.withdrawal_links.order_by("withdrawal_id").values_list("withdrawal__uid", flat=True):
        services.withdrawal_unsent(uid=uid)
    # A refusal of it before it expired (an alert re-sending it) is over: its withdrawals are paid anew.
    alert_resolve(kind=f"payout_{Outcome.REJECTED}", key=f"{code}:{chain_tx.txid}")
    logger.warning("%s: payout %s expired unmined; its withdrawals are planned again", code, chain_tx.txid)


def refused_expired(chain_tx: ChainTx) -> None:
    """The node refused the stored bytes as expired: past its expiration, not yet past the margin after
    which the monitor closes it. It is rebuilt then, not rejected."""
    logger.warning(
        "%s: payout %s expired before a block took it; once closed, its withdrawals are paid by a new "
        "transaction",
        chain_tx.code,
        chain_tx.txid,
    )
