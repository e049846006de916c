"""TRON sweeps (docs/tron.md): what a deposit address receives of trx or a TRC-20 token moves to the hot
address, on the one Sweep state machine (chains.sweeps), a round at a time (beat: `tron_sweep_all`).

- **trx** needs nothing first: the address sends the amount the sweep was opened with, which is what it
  held less the bandwidth it would burn (none while its 600 free bytes a day last).
- **A token** is moved by a contract call from the deposit address, which must exist on chain and have the
  energy of the call. Each round reads the address and takes the one step it still lacks, each signed,
  stored, sent and followed until solidified (TOPUP, `topup_tx`):
  - its activation (energy "delegate"): an AccountCreateContract from the hot address; with "burn" the
    TRX top-up activates it;
  - its energy: with "delegate", staked energy lent by the configured resource account (the hot address or
    m/44'/195'/0'/1/1), in whole TRX of stake sized from the network's energy per staked TRX
    (getaccountresource's TotalEnergyLimit / TotalEnergyWeight, rounded up); with "burn", TRX to burn at
    the chain's `getEnergyFee`;
  - TRX for its bandwidth, when its free bandwidth is used up (getTransactionFee a byte).
  The energy of the call is what `triggerconstantcontract` measures for this very transfer, times
  ENERGY_MARGIN, rounded up; the sweep's `fee_limit` is that energy at `getEnergyFee`, in both modes:
  java-tron caps the energy a call may use, staked or burnt, by its fee_limit. Fees and rates come from
  `getchainparameters` and the node's accounts each round, never constants.
- **Then the sweep** (READY -> SENT -> DONE once solidified). Delegated energy is taken back once the
  sweep is final (UnDelegateResource), whatever its outcome; until then the address is not swept again.
- **Failures are booked and alerted, never retried by themselves**: a sweep whose receipt is OUT_OF_ENERGY
  or REVERT is FAILED with what it burnt booked; a token that refuses the transfer (a blacklisted
  address) fails the sweep before anything is signed. A shortage (the hot address's TRX, the lender's
  stake, a fee over `fee_limit_cap`) holds the sweep with its reason in `last_error`; the lender's is an
  alert too, since only a person can stake more.
- **Expiry instead of nonces**: a stored transaction the node does not know is re-sent, the same bytes,
  until the node's head is past its expiration; after that no block can include it, so the step (or the
  sweep) is decided again from what the chain shows. This is what lets TRON rebuild where EVM never may.
Every TRX burnt (each receipt's fee, the activations' included) is booked to the house account.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_UP, Decimal
from functools import partial

from alerts.services import alert_raise, alert_resolve
from chains.backend import get_backend
from chains.base import (
    ChainUnavailable,
    FeeOverCap,
    InsufficientFunds,
    PayoutHeld,
    SignedTx,
    UnsignedTx,
)
from chains.derivation import derive_internal_address
from chains.models import ChainTx, Sweep
from chains.sweeps import (
    FINISHED,
    OPEN,
    sweep_candidates,
    sweep_done,
    sweep_expired,
    sweep_failed,
    sweep_funded,
    sweep_open,
    sweep_release_expired,
    sweep_release_stored,
    sweep_released,
    sweep_rounds,
    sweep_send,
    sweep_stored,
    sweep_topup_done,
    sweep_topup_expired,
    sweep_topup_stored,
    sweep_unfunded,
)
from chains.tron.backend import TronBackend
from chains.tron.config import TronConfig, scanned_codes, tron_config
from chains.tron.node import TronNode
from chains.tron.payouts import BANDWIDTH_OVERHEAD, ENERGY_MARGIN, at_head
from chains.tron.policy import signing_request
from chains.tron.proto import (
    AccountCreateContract,
    AccountType,
    ContractMessage,
    DelegateResourceContract,
    Resource,
    TransferContract,
    TriggerSmartContract,
    UnDelegateResourceContract,
)
from chains.tron.results import ChainParameters
from chains.tron.transaction import Transaction, trc20_transfer_data
from chains.tron.units import from_units, to_units
from core.assets import get_asset
from core.money import quantize

logger = logging.getLogger(__name__)

SUN = 1_000_000


class EnergyShort(PayoutHeld):
    """The resource account has not enough staked energy left to lend: a person stakes more."""


@dataclass(frozen=True)
class Needs:
    """What one round found the deposit address lacking (sun; one step at a time), or None of it."""

    activate: bool = False
    delegate: int = 0
    topup: int = 0
    fee_limit: int = 0  # of the sweep itself
    exists: bool = True  # the address is activated (else a top-up or activation pays its creation)

    @property
    def lacking(self) -> bool:
        return self.activate or bool(self.delegate or self.topup)


def tron_sweep(code: str) -> None:
    """One round of `code`: each open sweep moved one step, delegated energy taken back from finished
    ones, then sweeps opened for addresses that hold enough. One sweep that fails is logged and the others
    go on; an unreachable node stops the round."""
    backend = get_backend(code)
    assert isinstance(backend, TronBackend)
    config = tron_config(code)
    for sweep in Sweep.objects.filter(code=code, status__in=OPEN).order_by("pk"):
        _guarded(sweep, partial(_step, backend, config, sweep))
    for sweep in Sweep.objects.filter(code=code, status__in=FINISHED, delegated__gt=0).order_by("pk"):
        _guarded(sweep, partial(_release, backend, sweep))
    for deposit, index in sweep_candidates(code):
        try:
            _open(backend, config, deposit, index)
        except ChainUnavailable:
            raise
        except Exception:
            logger.exception("a sweep of %s %s could not be opened; the others go on", code, deposit)


def _guarded(sweep: Sweep, step: Callable[[], None]) -> None:
    try:
        step()
    except ChainUnavailable:
        raise
    except PayoutHeld as exc:  # short of TRX or stake, a fee over the cap, the signer down: next round
        logger.warning("sweep %s of %s waits: %s", sweep.pk, sweep.code, exc)
        Sweep.objects.filter(pk=sweep.pk).update(last_error=str(exc)[:500])
    except Exception as exc:
        logger.exception("sweep %s of %s failed this round; the others go on", sweep.pk, sweep.code)
        Sweep.objects.filter(pk=sweep.pk).update(last_error=str(exc)[:500])


def _open(backend: TronBackend, config: TronConfig, deposit: str, index: int) -> Sweep | None:
    """sweep_open: a sweep of what `deposit` holds, if at least `sweep_min`. trx opens READY, less the
    bandwidth its transfer will burn; a token TOPUP (what it lacks is found by the next round)."""
    node = backend.node(config.code)
    if config.contract is None:
        balance = node.account(deposit).balance
        if balance <= 0:
            return None
        message = TransferContract(deposit, backend.hot_address(config.code), balance)
        amount = from_units(max(balance - _bandwidth_burn(node, deposit, message), 0))
        status = Sweep.Status.READY
    else:
        held = backend.token_units(node, config, deposit)
        places = get_asset(config.code).amount_decimals
        amount = quantize(from_units(held, config.decimals), decimals=places, rounding=ROUND_DOWN)
        status = Sweep.Status.TOPUP
    if amount < config.sweep_min or amount <= 0:
        return None
    return sweep_open(config.code, deposit, index, amount, status)


def _step(backend: TronBackend, config: TronConfig, sweep: Sweep) -> None:
    if sweep.status == Sweep.Status.TOPUP:
        if sweep.topup_tx is not None:
            _follow(backend, sweep, sweep.topup_tx, final=_step_done, expired=sweep_topup_expired)
            return
        ready = _prepare(backend, config, sweep)
        if ready is None:
            return
        sweep.refresh_from_db()
        _send_sweep(backend, config, sweep, ready)  # what this round just read, not read again
    elif sweep.status == Sweep.Status.READY:
        _send_sweep(backend, config, sweep)
    elif sweep.status == Sweep.Status.SENT and sweep.sweep_tx is not None:
        _follow(backend, sweep, sweep.sweep_tx, final=sweep_done, expired=sweep_expired)


def _prepare(backend: TronBackend, config: TronConfig, sweep: Sweep) -> Needs | None:
    """Take the one step the address lacks; when it lacks nothing, the sweep is READY and what was read
    is returned (None: a step was taken, or the sweep failed)."""
    code, hot = sweep.code, backend.hot_address(sweep.code)
    needs = _needs(backend, config, sweep)
    if needs is None:
        return None  # failed: the token refuses the transfer
    if not needs.lacking:
        sweep_funded(sweep.pk)
        return needs
    message: ContractMessage
    purpose, kind = "topup", ChainTx.Kind.TOPUP
    if needs.activate:
        message = AccountCreateContract(hot, sweep.address, AccountType.Normal)
        purpose, kind = "activate", ChainTx.Kind.ACTIVATE
    elif needs.delegate:
        lender = _lender(config)
        if backend.node(code).account(lender).staked_energy < needs.delegate:
            _energy_short(config, sweep, lender, needs.delegate)
        message = DelegateResourceContract(lender, Resource.ENERGY, needs.delegate, sweep.address)
        purpose, kind = "delegate", ChainTx.Kind.DELEGATE
    else:
        if from_units(needs.topup) > config.fee_limit_cap:
            raise FeeOverCap(
                f"the sweep needs {from_units(needs.topup)} TRX at {sweep.address}, more than a top-up "
                f"may send (fee_limit_cap {config.fee_limit_cap} TRX)"
            )
        message = TransferContract(hot, sweep.address, needs.topup)
    if kind != ChainTx.Kind.DELEGATE:
        parameters = backend.node(code).chain_parameters()
        creation = 0 if needs.exists else _creation_fee(parameters)
        _need_hot_trx(backend, code, needs.topup + creation)
    signed = _sign(backend, code, purpose, message, sweep.derivation_index)
    if sweep_topup_stored(sweep.pk, _store(kind, signed)):
        sweep_send(backend, code, signed)
        if kind == ChainTx.Kind.DELEGATE:
            alert_resolve(kind="tron_energy_short", key=code)  # the stake sufficed again
    return None


def _needs(backend: TronBackend, config: TronConfig, sweep: Sweep) -> Needs | None:
    """What the token sweep of `sweep` lacks now, from the node: the energy of the very call it will make,
    its bandwidth, the address's own TRX and energy. None once the token refused the transfer (failed)."""
    node = backend.node(sweep.code)
    parameters = node.chain_parameters()
    call = _call(backend, config, sweep)
    measured = node.trigger_constant(sweep.address, call.contract_address, call.data)
    if measured.reverted:
        sweep_failed(sweep.pk, f"the token refuses the transfer from {sweep.address}: {measured.message}")
        return None
    energy = int((Decimal(measured.energy_used) * ENERGY_MARGIN).to_integral_value(rounding=ROUND_UP))
    fee_limit = energy * parameters.sun("getEnergyFee")
    if fee_limit > to_units(config.fee_limit_cap):
        raise FeeOverCap(
            f"the sweep needs a fee_limit of {from_units(fee_limit)} TRX, over the configured "
            f"fee_limit_cap {config.fee_limit_cap} TRX"
        )
    account = node.account(sweep.address)
    if not account.exists and config.energy == "delegate":
        return Needs(activate=True, fee_limit=fee_limit, exists=False)
    resource = node.account_resource(sweep.address) if account.exists else None
    short = max(energy - (resource.energy_left if resource else 0), 0)
    if config.energy == "delegate" and short:
        lent = node.account_resource(_lender(config))
        if not lent.total_energy_limit or not lent.total_energy_weight:
            raise ChainUnavailable("getaccountresource gives no TotalEnergyLimit or TotalEnergyWeight")
        # Whole TRX of stake whose energy covers `short` at the network's rate (rounded up).
        trx = -(-short * lent.total_energy_weight // lent.total_energy_limit)
        return Needs(delegate=max(trx, 1) * SUN, fee_limit=fee_limit)
    burn = short * parameters.sun("getEnergyFee") if config.energy == "burn" else 0
    burn += _bandwidth_burn(node, sweep.address, call, fee_limit=fee_limit, exists=account.exists)
    if account.balance < burn or not account.exists:
        return Needs(topup=max(burn - account.balance, 1), fee_limit=fee_limit, exists=account.exists)
    return Needs(fee_limit=fee_limit)


def _send_sweep(backend: TronBackend, config: TronConfig, sweep: Sweep, read: Needs | None = None) -> None:
    """The sweep signed, stored, sent; a token's needs as `read` this round, else read now."""
    code, node = sweep.code, backend.node(sweep.code)
    message: ContractMessage
    if config.contract is None:
        message = TransferContract(sweep.address, backend.hot_address(code), to_units(sweep.amount))
        fee_limit = 0
    else:
        needs = read or _needs(backend, config, sweep)
        if needs is None:
            return
        if needs.lacking:  # the call costs more now than when the address was readied
            sweep_unfunded(sweep.pk, f"{sweep.address} lacks what its sweep needs now: {needs}")
            return
        message, fee_limit = _call(backend, config, sweep), needs.fee_limit
    held = node.account(sweep.address).balance
    need = fee_limit + (message.amount if isinstance(message, TransferContract) else 0)
    if config.contract is None and held < need:
        raise InsufficientFunds(f"{sweep.address} holds {from_units(held)} TRX, {from_units(need)} swept")
    signed = _sign(backend, code, "sweep", message, sweep.derivation_index, fee_limit=fee_limit)
    if sweep_stored(sweep.pk, _store(ChainTx.Kind.SWEEP, signed)):
        sweep_send(backend, code, signed)


def _release(backend: TronBackend, sweep: Sweep) -> None:
    """Take back the energy lent to a finished sweep's address (the same lender, the whole stake lent)."""
    if sweep.release_tx is not None:
        _follow(backend, sweep, sweep.release_tx, final=sweep_released, expired=sweep_release_expired)
        return
    message = UnDelegateResourceContract(
        sweep.lender, Resource.ENERGY, to_units(sweep.delegated), sweep.address
    )
    signed = _sign(backend, sweep.code, "undelegate", message, sweep.derivation_index)
    if sweep_release_stored(sweep.pk, _store(ChainTx.Kind.UNDELEGATE, signed)):
        sweep_send(backend, sweep.code, signed)


def _step_done(sweep_id: int, *, fee_paid: Decimal | None = None) -> None:
    """A step is final: a delegation's stake and lender are recorded with it (read from its own bytes)."""
    sweep = Sweep.objects.select_related("topup_tx").get(pk=sweep_id)
    assert sweep.topup_tx is not None
    message = Transaction.from_json(json.loads(sweep.topup_tx.raw)).contract
    if isinstance(message, DelegateResourceContract):
        lent = from_units(message.balance)
        sweep_topup_done(sweep_id, fee_paid=fee_paid, delegated=lent, lender=message.owner_address)
    else:
        sweep_topup_done(sweep_id, fee_paid=fee_paid)


def _follow(
    backend: TronBackend,
    sweep: Sweep,
    chain_tx: ChainTx,
    *,
    final: Callable[..., None],
    expired: Callable[[int, str], None],
) -> None:
    """The stored transaction re-sent while it may still be mined, decided again once it never can be,
    and its outcome taken once its block is solidified."""
    code = sweep.code
    status = backend.tx_status(code, chain_tx.txid)
    if not status.known:
        if backend.expired(code, chain_tx.raw):
            expired(sweep.pk, f"{chain_tx.kind} {chain_tx.txid} expired and the node does not have it")
        else:
            sweep_send(backend, code, SignedTx(txid=chain_tx.txid, raw=chain_tx.raw, fee=chain_tx.fee))
        return
    if status.block is None or not status.final:
        return  # in a block not yet solidified (or waiting for one): decided at finality only
    if not status.failed:
        final(sweep.pk, fee_paid=status.fee_paid)
    elif sweep.status in FINISHED:  # an undelegation the chain refused: signed again next round
        expired(sweep.pk, f"{chain_tx.kind} {chain_tx.txid} {status.failure} on chain")
    else:
        reason = f"{chain_tx.kind} {chain_tx.txid} {status.failure} on chain"
        sweep_failed(sweep.pk, reason, failed=chain_tx.pk, fee_paid=status.fee_paid)


# --- building, signing, storing, sending -----------------------------------------------------------------


def _call(backend: TronBackend, config: TronConfig, sweep: Sweep) -> TriggerSmartContract:
    assert config.contract is not None
    units = to_units(sweep.amount, config.decimals)
    data = trc20_transfer_data(backend.hot_address(sweep.code), units)
    return TriggerSmartContract(sweep.address, config.contract, data)


def _sign(
    backend: TronBackend, code: str, purpose: str, message: ContractMessage, index: int, *, fee_limit: int = 0
) -> SignedTx:
    tx = at_head(backend.node(code), message, fee_limit)
    sender = str(getattr(message, "owner_address", ""))
    unsigned = UnsignedTx(
        code=code,
        payload=signing_request(purpose, tx.raw_bytes, index=index),
        payments=(),
        fee=from_units(fee_limit),
        sender=sender,
    )
    return backend.signer(code).sign(unsigned)


def _store(kind: str, signed: SignedTx) -> Callable[[Sweep], ChainTx]:
    def store(sweep: Sweep) -> ChainTx:
        return ChainTx.objects.create(
            code=sweep.code,
            kind=kind,
            txid=signed.txid,
            raw=signed.raw,
            fee=signed.fee,
            sender=signed.sender,
            sweep=sweep,
        )

    return store


# --- what the chain says -------------------------------------------------------------------------------


def _bandwidth_burn(
    node: TronNode, owner: str, message: ContractMessage, *, fee_limit: int = 0, exists: bool = True
) -> int:
    """Sun `owner` burns for the bandwidth of a transaction of `message`: none while its free (or staked)
    bandwidth covers it; a new account gets the free bytes once activated."""
    parameters = node.chain_parameters()
    needed = len(at_head(node, message, fee_limit).raw_bytes) + BANDWIDTH_OVERHEAD
    left = node.account_resource(owner).bandwidth_left if exists else parameters.sun("getFreeNetLimit")
    return 0 if left >= needed else needed * parameters.sun("getTransactionFee")


def _need_hot_trx(backend: TronBackend, code: str, sun: int) -> None:
    hot = backend.hot_address(code)
    held = backend.node(code).account(hot).balance
    if held < sun:
        raise InsufficientFunds(
            f"the hot address {hot} holds {from_units(held)} TRX, {from_units(sun)} needed"
        )


def _creation_fee(parameters: ChainParameters) -> int:
    """What the hot address burns to create an account (the fee and, without staked bandwidth, its bytes)."""
    return parameters.sun("getCreateNewAccountFeeInSystemContract") + parameters.sun("getCreateAccountFee")


def _lender(config: TronConfig) -> str:
    assert config.resource_index is not None, "energy 'delegate' names its resource account"
    return derive_internal_address("tron", config.resource_index)


def _energy_short(config: TronConfig, sweep: Sweep, lender: str, sun: int) -> None:
    message = (
        f"{lender} has not {from_units(sun)} TRX of staked energy left to lend to the sweep of "
        f"{sweep.amount} {sweep.code} from {sweep.address}: stake more TRX for energy on it (Stake 2.0), "
        'or set "energy": "burn"'
    )
    alert_raise(kind="tron_energy_short", key=config.code, message=message)
    raise EnergyShort(message)


def tron_sweep_all() -> None:
    """Beat: a sweep round of every TRON code on the tron backend, each on its own."""
    sweep_rounds(scanned_codes(), tron_sweep)
