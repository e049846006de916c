"""EVM sweeps: what deposit addresses receive moves to the hot address, which pays the withdrawals, on the
one Sweep state machine (chains.sweeps).

A deposit address holding at least the code's `sweep_min` (after a confirmed deposit) gets a `Sweep`,
READY for a native coin or a token address already holding its gas, else TOPUP: its gas top-up is signed,
stored (its nonce taken) and sent; once mined the sweep is READY, then its transaction is stored and sent
(SENT) and mined (DONE), or mined with status 0 (FAILED: an alert for a person).

Every transaction is signed and stored (with its nonce taken) in one commit before it is sent; a round
after a crash re-sends the stored bytes, never a new transaction. The sweep is built only once the top-up
is mined (never after a guessed delay). A token sweep's gas is topped up exactly: what the transfer's gas
costs at the quoted fee, less what the address holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from functools import cache, partial
from typing import Any

from web3 import Web3

from chains.backend import get_backend
from chains.base import ChainUnavailable, FeeQuote, PayoutHeld, SignedTx
from chains.evm.backend import EvmBackend
from chains.evm.config import evm_config
from chains.evm.node import NATIVE_GAS, coin, from_units, hot_address, to_units
from chains.models import ChainTx, Sweep
from chains.nonces import nonce_take
from chains.sweeps import (
    OPEN,
    sweep_candidates,
    sweep_done,
    sweep_failed,
    sweep_funded,
    sweep_open,
    sweep_rounds,
    sweep_send,
    sweep_stored,
    sweep_topup_stored,
)
from core.assets import get_asset

logger = logging.getLogger(__name__)

# Gas limit of a token sweep's transfer (an ERC-20 transfer to an address that holds some uses 30-65 k).
TOKEN_SWEEP_GAS = 100_000


def evm_sweep(code: str) -> None:
    """One round of `code`: move every open sweep one step, then open sweeps for addresses that hold
    enough. One sweep that fails is logged and the others go on; an unreachable node stops the round."""
    backend = get_backend(code)
    assert isinstance(backend, EvmBackend)
    quote = cache(partial(backend.quote_fee, code))  # asked of the node once per round, when needed
    for sweep in Sweep.objects.filter(code=code, status__in=OPEN).order_by("pk"):
        try:
            _step(backend, sweep, quote)
        except ChainUnavailable:
            raise
        except PayoutHeld as exc:  # the signer is down, the fee over the cap...: the next round tries again
            logger.warning("sweep %s of %s waits: %s", sweep.pk, code, exc)
            Sweep.objects.filter(pk=sweep.pk).update(last_error=str(exc)[:500])
        except Exception as exc:
            logger.exception("sweep %s of %s failed this round; the others go on", sweep.pk, code)
            Sweep.objects.filter(pk=sweep.pk).update(last_error=str(exc)[:500])
    for address, index in sweep_candidates(code):
        try:
            _open(backend, code, address, index, quote())
        except ChainUnavailable:
            raise
        except Exception:
            logger.exception("a sweep of %s %s could not be opened; the others go on", code, address)


def _open(backend: EvmBackend, code: str, address: str, index: int, fee: FeeQuote) -> Sweep | None:
    """sweep_open: a sweep of what `address` holds, if at least `sweep_min`; TOPUP when a token address
    lacks the gas of its transfer."""
    config = evm_config(code)
    if fee.over_cap:
        return None  # waits for a lower fee: nothing is stored
    w3 = backend.w3(code)
    owner = Web3.to_checksum_address(address)
    native = int(w3.eth.get_balance(owner))
    max_fee = to_units(fee.rate, 9)
    if config.contract is None:
        amount = coin(max(native - NATIVE_GAS * max_fee, 0))
        status = Sweep.Status.READY
    else:
        held = backend.token_balance(w3, config, owner)
        amount = from_units(held, config.decimals, get_asset(code).chain_decimals)
        status = Sweep.Status.TOPUP if native < TOKEN_SWEEP_GAS * max_fee else Sweep.Status.READY
    if amount < config.sweep_min:
        return None
    return sweep_open(code, address.lower(), index, amount, status)


def _step(backend: EvmBackend, sweep: Sweep, quote: Callable[[], FeeQuote]) -> None:
    if sweep.status == Sweep.Status.TOPUP:
        if sweep.topup_tx is None:
            _send_topup(backend, sweep, quote())
        else:
            _follow(backend, sweep, sweep.topup_tx, on_mined=sweep_funded)
    elif sweep.status == Sweep.Status.READY:
        _send_sweep(backend, sweep, quote())
    elif sweep.sweep_tx is not None:
        _follow(backend, sweep, sweep.sweep_tx, on_mined=sweep_done)


def _send_topup(backend: EvmBackend, sweep: Sweep, fee: FeeQuote) -> None:
    code, config = sweep.code, evm_config(sweep.code)
    if fee.over_cap:
        return  # waits for a lower fee: nothing is signed
    w3, owner = backend.w3(code), Web3.to_checksum_address(sweep.address)
    # Exactly the gas of the sweep at the fee offered, less what the address already holds.
    need = TOKEN_SWEEP_GAS * to_units(fee.rate, 9) - int(w3.eth.get_balance(owner))
    if need <= 0:
        sweep_funded(sweep.pk)
        return
    hot = hot_address()
    call = {"to": owner, "value": need, "data": "0x"}
    tx = backend.transaction(config, call, gas=NATIVE_GAS, fee=fee, nonce=backend.next_nonce(w3, config, hot))
    unsigned = backend.unsigned(code, tx, purpose="topup", ref=f"sweep:{sweep.pk}", payments=(), sender=hot)
    signed = backend.signer(code).sign(unsigned)
    if sweep_topup_stored(sweep.pk, partial(_store, signed=signed, kind=ChainTx.Kind.TOPUP)):
        sweep_send(backend, code, signed)


def _send_sweep(backend: EvmBackend, sweep: Sweep, fee: FeeQuote) -> None:
    code, config = sweep.code, evm_config(sweep.code)
    if fee.over_cap:
        return  # waits for a lower fee: nothing is signed
    w3, owner = backend.w3(code), Web3.to_checksum_address(sweep.address)
    native = int(w3.eth.get_balance(owner))
    call = backend.call_for(config, hot_address(), sweep.amount)
    gas = NATIVE_GAS if config.contract is None else TOKEN_SWEEP_GAS
    # What the address holds beyond the amount pays the gas (ROUND_DOWN: the fee never spends more).
    max_fee = min(to_units(fee.rate, 9), (native - call["value"]) // gas)
    priority = min(to_units(fee.priority or Decimal(0), 9), max_fee)
    if max_fee <= 0:
        raise ValueError(f"{sweep.address} cannot pay the gas of its sweep")
    quote = FeeQuote(rate=coin(max_fee, 9), unit="gwei", source=fee.source, priority=coin(priority, 9))
    tx = backend.transaction(config, call, gas=gas, fee=quote, nonce=backend.next_nonce(w3, config, owner))
    unsigned = backend.unsigned(
        code,
        tx,
        purpose="sweep",
        ref=f"sweep:{sweep.pk}",
        payments=(),
        sender=owner,
        index=sweep.derivation_index,
    )
    signed = backend.signer(code).sign(unsigned)
    if sweep_stored(sweep.pk, partial(_store, signed=signed, kind=ChainTx.Kind.SWEEP)):
        sweep_send(backend, code, signed)


def _follow(backend: EvmBackend, sweep: Sweep, chain_tx: ChainTx, *, on_mined: Any) -> None:
    status = backend.tx_status(sweep.code, chain_tx.txid)
    if not status.known:
        sweep_send(backend, sweep.code, SignedTx(txid=chain_tx.txid, raw=chain_tx.raw, fee=chain_tx.fee))
    elif status.failed:
        reason = f"{chain_tx.kind} {chain_tx.txid} failed on chain (status 0)"
        sweep_failed(sweep.pk, reason, failed=chain_tx.pk, fee_paid=status.fee_paid)
    elif status.confirmations >= 1:
        on_mined(sweep.pk, fee_paid=status.fee_paid)


def _store(sweep: Sweep, *, signed: SignedTx, kind: str) -> ChainTx | None:
    """The ChainTx of a signed top-up or sweep, its nonce taken first (None: another took it)."""
    if signed.nonce is None or not nonce_take(signed.chain, signed.sender, signed.nonce):
        logger.warning(
            "sweep %s: nonce %s of %s taken first; built again next round",
            sweep.pk,
            signed.nonce,
            signed.sender,
        )
        return None
    return ChainTx.objects.create(
        code=sweep.code,
        kind=kind,
        txid=signed.txid,
        raw=signed.raw,
        fee=signed.fee,
        sender=signed.sender,
        nonce=signed.nonce,
        sweep=sweep,
    )


def evm_sweep_all() -> None:
    """Beat: a sweep round of every code on the evm backend, each on its own."""
    from chains.evm.config import evm_configs

    sweep_rounds([code for code in evm_configs() if isinstance(get_backend(code), EvmBackend)], evm_sweep)
