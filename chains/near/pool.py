"""The deposit key pool: the public keys of the signer's NEAR deposit keys, exported into the database ahead
of use (`PoolKey`), so that an invoice gets its deposit account without asking the signer.

ed25519 has no public derivation: nobody but the signer can compute deposit key number i. So the signer
derives the pool from its seed (SLIP-10 m/44'/397'/1'/<i>', chains.near.keys: the seed's backup covers
every deposit account, no key file to lose) and answers the public keys, never a private one. The deposit
account of index i is the implicit account of key i (its 64 hex characters).

Top-up rides on the watched range of chains.scanning: the backend `watches_addresses`, and "watching up to
index n" is "the pool holds keys up to n". Allocation never hands out an index past the range (it asks for
more when half of it is left, and answers "try again in a minute" past it), and beat's chain scan tops it
up. Indexes come from the family's derivation counter, which never goes back: a key serves one deposit
address, and a deleted (swept) account's key serves nobody else.

Each key is kept with the seed it is of (by the seed's hot public key, `CHAIN_XPUBS["near"]`). When the
operator moves to another seed, only keys of the configured one are handed out: the keys of the old seed,
which the new signer could not sweep, serve no new invoice; the watched range is brought back to what the
new seed has (`reconcile`, at each scan) and the pool is exported again from the new signer. Accounts
handed out before keep being scanned, and sweeping them needs the old seed's signer.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Max, QuerySet

from alerts.services import alert_raise, alert_resolve
from chains.base import PayoutHeld, PayoutRefused
from chains.deposit_addresses import AddressesNotReady
from chains.models import PoolKey, WatchRange
from chains.near.config import hot_public_key

logger = logging.getLogger(__name__)

FAMILY = "near"
ALERT = "deposit_keys_unavailable"
EXPORT_BATCH = 500  # keys per request to the signer (its answer stays far below the socket's line limit)


def _seed_keys() -> QuerySet[PoolKey]:
    """The pool of the configured seed (its hot public key is CHAIN_XPUBS["near"])."""
    return PoolKey.objects.filter(family=FAMILY, seed_key=hot_public_key().hex())


def pool_account(code: str, index: int) -> str:
    """The deposit account of derivation index `index`; AddressesNotReady when the pool has no key there
    yet (the range is being topped up)."""
    key = _seed_keys().filter(index=index).values_list("public_key", flat=True).first()
    if key is None:
        raise AddressesNotReady(f"New {code} deposit accounts are being prepared; try again in a minute.")
    return str(key)


def exported_until() -> int:
    """The highest index the configured seed's pool holds a key for (-1: none)."""
    found = _seed_keys().aggregate(top=Max("index"))["top"]
    return -1 if found is None else int(found)


def reconcile(code: str) -> None:
    """The watched range says no more than the configured seed's pool holds: after a change of seed the
    range of the old one would hand out indexes the new pool has no key for, and never ask for more."""
    held = exported_until()
    if WatchRange.objects.filter(code=code, watched_until__gt=held).update(watched_until=held):
        logger.warning(
            "%s: the deposit key pool holds keys up to index %s for the configured seed (CHAIN_XPUBS "
            '["near"]); the watched range is brought back to it and the pool exported again',
            code,
            held,
        )


def top_up(code: str, upto_index: int) -> int:
    """Ask the signer for the public keys up to `upto_index` that the pool lacks; the index now held to.

    The signer down (or refusing) never stops the chain scan that asks: the pool keeps what it holds, the
    `deposit_keys_unavailable` alert tells a person (new invoices wait for keys once those run out), and
    the next scan asks again; the alert resolves itself once the signer answers."""
    from chains.near.signer import get_signer

    held, seed_key = exported_until(), hot_public_key().hex()
    signer = get_signer()
    while held < upto_index:
        count = min(EXPORT_BATCH, upto_index - held)
        try:
            keys = signer.public_keys(code, held + 1, count)
            _check(keys, count)
        except (PayoutHeld, PayoutRefused, ValueError) as exc:  # SignerUnavailable is a PayoutHeld
            alert_raise(
                kind=ALERT,
                key=code,
                message=f"{code}: the signer did not give deposit keys past index {held}: {exc}",
            )
            return held
        with transaction.atomic():
            PoolKey.objects.bulk_create(
                [
                    PoolKey(family=FAMILY, seed_key=seed_key, index=held + 1 + n, public_key=key)
                    for n, key in enumerate(keys)
                ]
            )
        held += count
        logger.info("%s: the deposit key pool now holds keys up to index %s", code, held)
    alert_resolve(kind=ALERT, key=code)
    return held


def _check(keys: list[str], count: int) -> None:
    """The signer answered `count` distinct ed25519 public keys in hex."""
    if len(keys) != count or len(set(keys)) != count:
        raise ValueError(f"the signer answered {len(keys)} keys for {count} asked")
    for key in keys:
        if len(key) != 64 or key != key.lower() or not all(c in "0123456789abcdef" for c in key):
            raise ValueError("the signer answered a public key that is not 64 lowercase hex characters")
