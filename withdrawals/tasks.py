"""Thin tasks: ids in, one service call. Each may run twice; the services re-read under a lock."""

from __future__ import annotations

from celery import shared_task

from core.wakeup import woken
from withdrawals import auto_withdrawals, drafts, idempotency, payouts


@shared_task(acks_late=True, ignore_result=True)
def payout_plan(code: str) -> None:
    woken(payouts.PLAN_TASK, code)  # before reading: a withdrawal committed from now on wakes the next run
    payouts.payout_plan(code)


@shared_task(acks_late=True, ignore_result=True)
def payout_broadcast(chain_tx_id: int) -> None:
    payouts.payout_broadcast(chain_tx_id)


@shared_task(ignore_result=True)
def payout_monitor_all() -> None:
    payouts.payout_monitor_all()


@shared_task(ignore_result=True)
def auto_withdrawal_sweep_due() -> None:
    auto_withdrawals.auto_withdrawal_sweep_due()


@shared_task(ignore_result=True)
def idempotency_keys_purge() -> None:
    idempotency.idempotency_keys_purge()
    drafts.payout_drafts_purge()  # the dashboard's confirmation tokens, kept as long as the keys
