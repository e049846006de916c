"""Nonces of account-based chains: one `NonceSlot` row per sending address, taken under its row lock in the
commit that stores the signed transaction using the nonce."""

from __future__ import annotations

from django.db import transaction

from chains.models import NonceSlot


def nonce_next(chain: str, sender: str) -> int | None:
    """The nonce the next transaction of `sender` uses, as stored; None before its first one."""
    return (
        NonceSlot.objects.filter(chain=chain, address=sender.lower())
        .values_list("next_nonce", flat=True)
        .first()
    )


def nonce_take(chain: str, sender: str, nonce: int) -> bool:
    """Take `nonce` for a transaction being stored (call inside its commit): True when it was the next one
    (the slot now points past it), False when another transaction took it first (the caller stores
    nothing; its transaction is never sent and is planned again with the next nonce)."""
    assert transaction.get_connection().in_atomic_block, "nonce_take runs in the commit that stores the tx"
    slot, _ = NonceSlot.objects.select_for_update().get_or_create(
        chain=chain, address=sender.lower(), defaults={"next_nonce": nonce}
    )
    if slot.next_nonce != nonce:
        return False
    slot.next_nonce = nonce + 1
    slot.save(update_fields=["next_nonce", "updated_at"])
    return True
