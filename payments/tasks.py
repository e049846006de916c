from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from chains import simulator as sandbox
from core.assets import all_assets
from core.offer import is_sandbox

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def sandbox_mine_block() -> None:
    if settings.SANDBOX_BLOCK_SECONDS and any(is_sandbox(asset.code) for asset in all_assets()):
        sandbox.sandbox_mine(count=1)
