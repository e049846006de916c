"""NEAR sweeps (see chains.near.backend): a deposit account is deleted into the hot account, on the one Sweep
state machine (chains.sweeps), a round at a time (beat: `near_sweep_all`).

- **One DeleteAccount.** The deposit account signs, with its own pool key (chains.near.pool), a transaction to
  itself deleting itself with the hot account as beneficiary: its whole balance, storage staking included,
  less the gas it burns, moves to the hot account. Nothing is topped up first (READY at once): the account
  pays its own gas. The sweep's amount is the balance read when it is built.
- **Only an account nobody is paying.** An account is swept once a confirmed deposit is newer than its last
  sweep (chains.sweeps.sweep_candidates) and it holds at least `sweep_min`; never while its invoice is still
  open (created, pending, processing or wrong: the client may pay again) or a deposit to it is seen and
  not final. A payment that lands after the deletion re-creates the implicit account (a transfer to an
  implicit account creates it) and is a confirmed deposit like any other: swept later. Its key serves
  that account only (chains.near.pool): an index is never handed to another invoice.
- **Stored, then sent.** The signed bytes are stored with READY -> SENT in one commit (sweep_stored), then
  sent; a round after a crash re-sends the stored bytes (never a new transaction) while the node does not
  know them and their block hash has not expired. Once it has expired unknown to the node (as payouts:
  chains.near.payouts.NearPayouts.expired), the sweep is READY again and built anew (a fresh nonce and
  block hash). Decided at finality only: done (what it burnt booked to the house account) or failed (an
  alert; the funds stay at the account).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from chains.backend import get_backend
from chains.base import ChainUnavailable, PayoutHeld, SignedTx, UnsignedTx
from chains.deposits import deposit_address_awaits_payment
from chains.models import ChainTx, PoolKey, Sweep
from chains.near import transaction
from chains.near.backend import NearBackend
from chains.near.config import FAMILY, NearConfig, near_config, near_configs
from chains.near.payouts import DELETE_ACCOUNT_GAS, RECEIPT_GAS, fee_near, fee_yocto
from chains.near.policy import signing_request
from chains.near.transaction import DeleteAccount, Transaction
from chains.near.units import from_yocto
from chains.sweeps import (
    OPEN,
    sweep_candidates,
    sweep_done,
    sweep_expired,
    sweep_failed,
    sweep_open,
    sweep_rounds,
    sweep_send,
    sweep_stored,
)
from core.offer import on_sandbox_backend
from payments.models import Deposit, DepositAddress

logger = logging.getLogger(__name__)

DELETE_GAS = 2 * (RECEIPT_GAS + DELETE_ACCOUNT_GAS)  # sent and executed (the account is its own receiver)


def near_sweep(code: str) -> None:
    """One sweep round of `code`: each open sweep moved a step, then sweeps opened (and sent) for the
    accounts due. One sweep that fails is logged and the others go on; an unreachable node stops the
    round."""
    backend = get_backend(code)
    assert isinstance(backend, NearBackend)
    config = near_config(code)
    for sweep in Sweep.objects.filter(code=code, status__in=OPEN).order_by("pk"):
        _guarded(sweep, partial(_step, backend, config, sweep))
    for account, index in sweep_candidates(code):
        if _pending(code, account):
            continue
        try:
            opened = _open(backend, config, account, index)
        except ChainUnavailable:
            raise
        except Exception:
            logger.exception("a sweep of %s %s could not be opened; the others go on", code, account)
            continue
        if opened is not None:
            _guarded(opened, partial(_send_sweep, backend, config, opened))


def _pending(code: str, account: str) -> bool:
    """A payment to `account` may still come or is on its way: its invoice is open, or a deposit to it is
    seen and not final."""
    owners = DepositAddress.objects.filter(route_key=account, tag="")
    if any(deposit_address_awaits_payment(address) for address in owners):
        return True
    return Deposit.objects.filter(address=account, status=Deposit.Status.SEEN).exists()


def _guarded(sweep: Sweep, step: Callable[[], None]) -> None:
    try:
        step()
    except ChainUnavailable:
        raise
    except PayoutHeld as exc:  # the signer down: next round
        logger.warning("sweep %s of %s waits: %s", sweep.pk, sweep.code, exc)
        Sweep.objects.filter(pk=sweep.pk).update(last_error=str(exc)[:500])
    except Exception as exc:
        logger.exception("sweep %s of %s failed this round; the others go on", sweep.pk, sweep.code)
        Sweep.objects.filter(pk=sweep.pk).update(last_error=str(exc)[:500])


def _open(backend: NearBackend, config: NearConfig, account: str, index: int) -> Sweep | None:
    """sweep_open (READY) of what `account` holds at the final block, if at least `sweep_min`; an account
    that no longer exists (swept already, its late deposit gone with it) is not swept."""
    found = backend.node(config.code).account(account)
    if found is None:
        logger.info("%s: %s no longer exists; nothing to sweep", config.code, account)
        return None
    amount = from_yocto(found.amount)
    if amount < config.sweep_min or amount <= 0:
        return None
    return sweep_open(config.code, account, index, amount, Sweep.Status.READY)


def _step(backend: NearBackend, config: NearConfig, sweep: Sweep) -> None:
    if sweep.status == Sweep.Status.READY:
        _send_sweep(backend, config, sweep)
    elif sweep.status == Sweep.Status.SENT and sweep.sweep_tx is not None:
        _follow(backend, sweep, sweep.sweep_tx)


def _send_sweep(backend: NearBackend, config: NearConfig, sweep: Sweep) -> None:
    """The DeleteAccount built from the account's access key and the final block, signed, stored, sent."""
    code, node = sweep.code, backend.node(sweep.code)
    key = _pool_key(sweep)
    access = node.access_key(sweep.address, transaction.public_key_text(key))
    if access is None:
        sweep_failed(sweep.pk, f"{sweep.address} does not exist or no longer holds its pool key")
        return
    tx = Transaction(
        signer_id=sweep.address,
        public_key=key,
        nonce=access.nonce + 1,
        receiver_id=sweep.address,
        block_hash=transaction.b58decode(node.final_block().hash),
        actions=(DeleteAccount(backend.hot_address(code)),),
    )
    unsigned = UnsignedTx(
        code=code,
        payload=signing_request("sweep", tx, index=sweep.derivation_index),
        payments=(),
        fee=fee_near(fee_yocto(DELETE_GAS, node.gas_price())),
        sender=sweep.address,
        nonce=tx.nonce,
    )
    signed = backend.signer(code).sign(unsigned)
    if sweep_stored(sweep.pk, _store(signed)):
        sweep_send(backend, code, signed)


def _pool_key(sweep: Sweep) -> bytes:
    """The public key of the deposit account's pool key: the account is its implicit account."""
    found = PoolKey.objects.filter(
        family=FAMILY, index=sweep.derivation_index, public_key=sweep.address
    ).values_list("public_key", flat=True)
    if not found:
        raise ValueError(f"no pool key {sweep.derivation_index} is the key of {sweep.address}")
    return bytes.fromhex(found[0])


def _follow(backend: NearBackend, sweep: Sweep, chain_tx: ChainTx) -> None:
    """Re-sent while it may still land, built again once it never can, decided at finality."""
    code = sweep.code
    status = backend.tx_status(code, chain_tx.txid)
    if not status.known:
        if backend.expired(code, chain_tx.raw):
            sweep_expired(sweep.pk, f"sweep {chain_tx.txid} expired and the node does not have it")
        else:
            signed = SignedTx(txid=chain_tx.txid, raw=chain_tx.raw, fee=chain_tx.fee, sender=chain_tx.sender)
            sweep_send(backend, code, signed)
        return
    if not status.final:
        return  # decided at finality only
    if status.failed:
        reason = f"sweep {chain_tx.txid} {status.failure} on chain"
        sweep_failed(sweep.pk, reason, failed=chain_tx.pk, fee_paid=status.fee_paid)
    else:
        sweep_done(sweep.pk, fee_paid=status.fee_paid)


def _store(signed: SignedTx) -> Callable[[Sweep], ChainTx]:
    def store(sweep: Sweep) -> ChainTx:
        return ChainTx.objects.create(
            code=sweep.code,
            kind=ChainTx.Kind.SWEEP,
            txid=signed.txid,
            raw=signed.raw,
            fee=signed.fee,
            sender=signed.sender or sweep.address,
            nonce=signed.nonce,
            sweep=sweep,
        )

    return store


def near_sweep_all() -> None:
    """Beat: a sweep round of every NEAR code on the near backend, each on its own."""
    sweep_rounds([code for code in near_configs() if not on_sandbox_backend(code)], near_sweep)
