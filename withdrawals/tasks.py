"""Thin tasks: ids in, one service call. Each may run twice; the services re-read under a lock."""

from __future__ import annotations

from celery import shared_task

from withdrawals import auto_withdrawals, idempotency, services


@shared_task(acks_late=True, ignore_result=True)
def withdrawal_broadcast(uid: str) -> None:
    services.withdrawal_broadcast(uid=uid)


@shared_task(acks_late=True, ignore_result=True)
def withdrawal_broadcast_many(uids: list[str]) -> None:
    """A bulk request's fan-out: one broadcast task per withdrawal (each retried and run on its own)."""
    for uid in uids:
        withdrawal_broadcast.delay(uid)


@shared_task(ignore_result=True)
def withdrawal_poll_open() -> None:
    services.withdrawal_poll_open()


@shared_task(ignore_result=True)
def auto_withdrawal_sweep_due() -> None:
    auto_withdrawals.auto_withdrawal_sweep_due()


@shared_task(ignore_result=True)
def idempotency_keys_purge() -> None:
    idempotency.idempotency_keys_purge()
