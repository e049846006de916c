"""Deposit address allocation: one derivation index per key family, never two owners per (address, tag)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from chains.addresses import route_key
from chains.base import get_backend
from payments.assets import get_asset
from payments.models import Company, DepositAddress, DerivationCounter


def _family_key(code: str) -> str:
    # Codes sharing a key (eth/usdc/usdterc20/bnb, trx/trc20usdt) share one index sequence, so an address
    # is never handed out twice across them.
    return get_asset(code).family


@transaction.atomic
def deposit_address_allocate(*, company: Company, code: str, owner: str) -> DepositAddress:
    """The next unused address (and tag) of `code` for `owner` ("invoice" or "static")."""
    asset = get_asset(code)
    family = _family_key(asset.code)
    DerivationCounter.objects.get_or_create(family=family)
    counter = DerivationCounter.objects.select_for_update().get(family=family)
    backend = get_backend(asset.code)
    while True:
        index = counter.next_index
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
