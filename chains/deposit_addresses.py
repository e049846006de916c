"""Deposit address allocation: one derivation index per key family, never two owners per (address, tag)."""

from __future__ import annotations

import logging
from functools import partial

from django.core.cache import cache
from django.db import IntegrityError, transaction

from chains.addresses import route_key
from chains.backend import get_backend
from chains.scanning import WATCH_AHEAD, watched_until
from core.assets import get_asset
from core.enqueue import TaskRef
from core.errors import DomainError
from core.throttle import SHARED_CACHE_FAILURES
from payments.models import Company, DepositAddress, DerivationCounter

logger = logging.getLogger(__name__)


def _family_key(code: str) -> str:
    # Codes sharing a key (eth/usdc/usdterc20/bnb, trx/trc20usdt) share one index sequence, so an address
    # is never handed out twice across them.
    return get_asset(code).family


WATCH_TASK = TaskRef[[str]]("chains.tasks.chain_watch_task")
KICK_KEY = "deposit-addresses:watch-asked:{}"  # set for 30 s once the extension of a code was asked for


class AddressesNotReady(DomainError):
    status = 503
    code = "deposit_addresses_unavailable"
    default_detail = "New deposit addresses are being prepared; try again in a minute."
    retry_after = 60


@transaction.atomic
def deposit_address_allocate(*, company: Company, code: str, owner: str) -> DepositAddress:
    """The next unused address (and tag) of `code` for `owner` ("invoice" or "static").

    On a chain whose node watches a range of addresses (the Bitcoin Core family), only an address inside
    that range is handed out: a payment to one outside it would not be seen. Past it the caller gets
    AddressesNotReady (nothing allocated) while the range is extended; nearing its end asks for the
    extension ahead of time.
    """
    asset = get_asset(code)
    family = _family_key(asset.code)
    DerivationCounter.objects.get_or_create(family=family)
    counter = DerivationCounter.objects.select_for_update().get(family=family)
    backend = get_backend(asset.code)
    limit = watched_until(asset.code)
    while True:
        index = counter.next_index
        if limit is not None and index > limit:
            _ask_to_watch(asset.code)
            raise AddressesNotReady(
                f"New {asset.code} deposit addresses are being prepared; try again in a minute."
            )
        if limit is not None and limit - index < WATCH_AHEAD // 2 and _first_ask(asset.code):
            transaction.on_commit(partial(_ask_to_watch, asset.code))  # once per 30 s, not per address
        counter.next_index += 1
        address, tag = backend.new_deposit_address(company, asset.code, index)
        try:
            with transaction.atomic():
                allocated = DepositAddress.objects.create(
                    company=company,
                    code=asset.code,
                    address=address,
                    route_key=route_key(asset.code, address),
                    tag=tag or "",
                    derivation_index=index,
                    owner=owner,
                )
        except IntegrityError:
            continue  # taken already (e.g. a key configured for two families): skip the index, never reuse
        counter.save(update_fields=["next_index"])
        return allocated


def _first_ask(code: str) -> bool:
    """The first ask for `code`'s extension in 30 s. The cache down (Redis, the broker's host too): no ask,
    beat's chain scan extends the range all the same; the address is handed out either way."""
    try:
        return bool(cache.add(KICK_KEY.format(code), 1, 30))
    except SHARED_CACHE_FAILURES as exc:
        logger.warning(
            "%s: the cache failed (%s: %s); the chain scan extends the range", code, type(exc).__name__, exc
        )
        return False


def _ask_to_watch(code: str) -> None:
    """Ask the chain worker to extend the watched range now; beat's chain scan does it anyway."""
    try:
        WATCH_TASK.delay(code)
    except Exception:  # the broker is down: the next chain scan extends the range all the same
        logger.warning("%s: could not ask for the watched range to be extended", code, exc_info=True)
