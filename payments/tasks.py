from __future__ import annotations

from celery import shared_task
from django.conf import settings

from payments import sandbox
from payments.assets import all_assets
from payments.chains.base import is_sandbox
from payments.deposits import chain_poll


@shared_task(ignore_result=True)
def chain_poll_all() -> None:
    """Ingest open transfers of every code (real chains; for the sandbox a backstop to its own calls)."""
    for asset in all_assets():
        chain_poll(asset.code)


@shared_task(ignore_result=True)
def sandbox_mine_block() -> None:
    if settings.SANDBOX_BLOCK_SECONDS and any(is_sandbox(asset.code) for asset in all_assets()):
        sandbox.sandbox_mine(count=1)
