from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from chains import simulator as sandbox
from chains.base import ChainUnavailable
from chains.scanning import chain_catch_up, chain_watch
from chains.settled import settled_watch
from core.assets import all_assets
from core.offer import is_offered, is_sandbox, offered_codes

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def chain_scan_all() -> None:
    """An ingestion cycle of every offered code (chains.scanning), and more of one whose scan stopped
    early, up to its backlog or CATCH_UP_ROUNDS.

    Each code on its own: a node that is down or a backend that fails never stops the codes after it.
    """
    for asset in all_assets():
        if not is_offered(asset.code):
            continue  # a sandbox code while the sandbox is off: nothing there is money
        try:
            chain_catch_up(asset.code)
        except Exception:
            logger.exception("chain scan of %s failed; the other codes go on", asset.code)


@shared_task(ignore_result=True)
def chain_settled_watch_all() -> None:
    """The settled watch of every offered code (chains.settled), each on its own."""
    for code in offered_codes():
        try:
            settled_watch(code)
        except ChainUnavailable as exc:
            logger.warning("%s: settled watch paused, the node cannot be reached: %s", code, exc)
        except Exception:
            logger.exception("settled watch of %s failed; the other codes go on", code)


@shared_task(ignore_result=True)
def chain_watch_task(code: str) -> None:
    """Extend the node's watched range of `code` now (deposit address allocation asks for it)."""
    chain_watch(code)


@shared_task(ignore_result=True)
def evm_sweep_all() -> None:
    """Sweep EVM deposit addresses to the hot address (chains.evm.sweeps)."""
    from chains.evm.sweeps import evm_sweep_all as sweep_all

    sweep_all()


@shared_task(ignore_result=True)
def tron_sweep_all() -> None:
    """Sweep TRON deposit addresses to the hot address (chains.tron.sweeps)."""
    from chains.tron.sweeps import tron_sweep_all as sweep_all

    sweep_all()


@shared_task(ignore_result=True)
def near_sweep_all() -> None:
    """Delete funded NEAR deposit accounts into the hot account (chains.near.sweeps)."""
    from chains.near.sweeps import near_sweep_all as sweep_all

    sweep_all()


@shared_task(ignore_result=True)
def sandbox_mine_block() -> None:
    if settings.SANDBOX_BLOCK_SECONDS and any(is_sandbox(asset.code) for asset in all_assets()):
        sandbox.sandbox_mine(count=1)
