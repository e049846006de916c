from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from chains import simulator as sandbox
from chains.base import is_offered, is_sandbox
from payments.assets import all_assets
from payments.deposits import chain_poll

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def chain_poll_all() -> None:
    """Ingest open transfers of every code (real chains; for the sandbox a backstop to its own calls).

    Each code on its own: a node that is down or a backend that fails never stops the codes after it.
    """
    for asset in all_assets():
        if not is_offered(asset.code):
            continue  # a sandbox code while the sandbox is off: nothing there is money
        try:
            chain_poll(asset.code)
        except Exception:
            logger.exception("chain poll of %s failed; the other codes go on", asset.code)


@shared_task(ignore_result=True)
def sandbox_mine_block() -> None:
    if settings.SANDBOX_BLOCK_SECONDS and any(is_sandbox(asset.code) for asset in all_assets()):
        sandbox.sandbox_mine(count=1)
