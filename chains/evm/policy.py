"""What the EVM signer agrees to sign: every request is checked against the database first.

The signer signs exactly three kinds of transaction, each only as the stored plan says:
- `payout`: from the hot address, paying one accepted (processing) withdrawal exactly its address and
  amount, within the code's `payout_limit` (once, and within `daily_limit`: the signer's own journal);
- `topup`: from the hot address to the deposit address of a token sweep waiting for gas, at most
  `topup_cap` of the native coin (and within `topup_daily_limit`: the journal);
- `sweep`: from a deposit address (the key of the sweep's derivation index) to the hot address, exactly
  the amount the stored sweep names.
Every transaction is EIP-1559 on the code's chain, with a fee under the cap. Anything else is refused
with the reason; nothing is signed. The database says what may be signed; what was signed is kept by the
signer itself (its journal), out of reach of the web and the workers, which can write the database.

The addresses are never taken from the database: the hot address and a sweep's deposit address are what
the signer derives from its own seed (`own`: (BIP-44 chain, index) -> address), and a stored row that
names another address is refused. So whoever writes the database can at worst move the house's coin
between the house's own addresses, within the caps.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import Q
from web3 import Web3

from chains import payout_book
from chains.base import PayoutRefused
from chains.evm.config import EvmConfig, evm_config
from chains.evm.node import coin, transfer_call
from chains.models import Sweep
from core.money import number_text

MAX_GAS = 500_000
HOT = (1, 0)  # (BIP-44 chain, index) of the hot address
RECEIVING = 0  # the BIP-44 chain of the deposit addresses

# The signer's own derivation: the address of m/44'/60'/0'/<chain>/<index> of its seed.
Own = Callable[[int, int], str]


class SignRefused(PayoutRefused):
    """The request matches no stored plan (or breaks a limit): nothing is signed."""

    refused_by = "The EVM signer"


@dataclass(frozen=True)
class Approved:
    """What to sign with: the key at m/44'/60'/0'/<chain>/<index>, expected to be `sender`; and what the
    signer's own journal keeps of it (chains.evm.signer.SignerJournal)."""

    chain: int
    index: int
    sender: str
    tx: dict[str, Any]
    code: str
    purpose: str  # payout, topup, sweep
    ref: str  # "withdrawal:<uid>" or "sweep:<id>"
    amount: Decimal  # what it moves (a top-up: the native coin)
    daily_limit: Decimal | None = None  # the most of `amount` this purpose of the code may move a UTC day


def check(code: str, payload: str | dict[str, Any], own: Own) -> Approved:
    """Approve a signing request (an UnsignedTx's payload) or raise SignRefused with the reason; `own`
    derives the signer's addresses from its seed."""
    request = json.loads(payload) if isinstance(payload, str) else payload
    if not isinstance(request, dict):
        raise SignRefused("a request is a JSON object")
    try:
        config = evm_config(code)
    except Exception as exc:
        raise SignRefused(f"{code} is not an EVM code served here") from exc
    tx = _tx(config, request.get("tx"))
    purpose, ref = request.get("purpose"), str(request.get("ref", ""))
    hot = own(*HOT)
    if purpose == "payout":
        amount = _payout(config, tx, ref)
        return Approved(*HOT, hot, tx, config.code, purpose, ref, amount, daily_limit=config.daily_limit)
    if purpose == "topup":
        _topup(config, tx, ref, own)
        value = coin(tx["value"])
        return Approved(*HOT, hot, tx, config.code, purpose, ref, value, daily_limit=config.topup_daily_limit)
    if purpose == "sweep":
        sweep = _sweep(config, tx, ref, own, hot)
        index = sweep.derivation_index
        return Approved(RECEIVING, index, own(RECEIVING, index), tx, config.code, purpose, ref, sweep.amount)
    raise SignRefused(f"unknown purpose {purpose!r}: only payout, topup and sweep are signed")


def _tx(config: EvmConfig, raw: Any) -> dict[str, Any]:
    fields = {
        "type",
        "chainId",
        "nonce",
        "gas",
        "maxFeePerGas",
        "maxPriorityFeePerGas",
        "to",
        "value",
        "data",
    }
    if not isinstance(raw, dict) or set(raw) != fields:
        raise SignRefused(f"a transaction has exactly the fields {sorted(fields)}")
    ints = ("chainId", "nonce", "gas", "maxFeePerGas", "maxPriorityFeePerGas", "value")
    if raw["type"] != 2 or any(
        not isinstance(raw[k], int) or isinstance(raw[k], bool) or raw[k] < 0 for k in ints
    ):
        raise SignRefused("an EIP-1559 (type 2) transaction with whole, non-negative numbers")
    if raw["chainId"] != config.chain_id:
        raise SignRefused(f"chain {raw['chainId']} is not {config.code}'s chain {config.chain_id}")
    if raw["maxFeePerGas"] > config.fee_cap_wei or raw["maxPriorityFeePerGas"] > raw["maxFeePerGas"]:
        raise SignRefused("the fee is over the configured cap")
    if raw["gas"] > MAX_GAS:
        raise SignRefused(f"gas {raw['gas']} is over {MAX_GAS}")
    if not isinstance(raw["to"], str) or not Web3.is_address(raw["to"]) or not isinstance(raw["data"], str):
        raise SignRefused("to is an address and data is hex")
    return dict(raw)


def _expect(tx: dict[str, Any], config: EvmConfig, to: str, amount: Decimal) -> None:
    """The transaction moves exactly `amount` of the code to `to`, and nothing else."""
    want = transfer_call(config, to, amount)
    if (tx["to"].lower(), tx["value"], tx["data"].lower()) != (
        want["to"].lower(),
        want["value"],
        want["data"].lower(),
    ):
        raise SignRefused("the transaction does not move exactly what the stored plan says")


def _payout(config: EvmConfig, tx: dict[str, Any], ref: str) -> Decimal:
    payout = payout_book.book().payout(config.code, ref, tx["nonce"])
    if payout is None:
        raise SignRefused(f"no withdrawal {ref!r} of {config.code}")
    if not payout.processing:
        raise SignRefused(f"withdrawal {payout.uid} is {payout.status}, not processing")
    _expect(tx, config, payout.to_address, payout.amount)
    if payout.paid_by_other_nonce:
        raise SignRefused(f"withdrawal {payout.uid} is paid by a transaction already (another nonce)")
    if config.payout_limit is not None and payout.amount > config.payout_limit:
        raise SignRefused(
            f"{number_text(payout.amount)} {config.code} is over the payout limit "
            f"{number_text(config.payout_limit)}"
        )
    return payout.amount  # the day's total is the journal's (chains.evm.signer)


def _topup(config: EvmConfig, tx: dict[str, Any], ref: str, own: Own) -> None:
    sweep = _stored_sweep(config, ref, own, Sweep.Status.TOPUP)
    if tx["to"].lower() != sweep.address.lower() or tx["data"] not in ("0x", "") or config.contract is None:
        raise SignRefused("a top-up sends only native coin to the deposit address of a token sweep")
    if coin(tx["value"]) > config.topup_cap:
        raise SignRefused(f"the top-up is over the cap {number_text(config.topup_cap)}")
    if sweep.topup_tx is not None and sweep.topup_tx.nonce != tx["nonce"]:
        raise SignRefused(f"sweep {sweep.pk} has its top-up already")


def _sweep(config: EvmConfig, tx: dict[str, Any], ref: str, own: Own, hot: str) -> Sweep:
    sweep = _stored_sweep(config, ref, own, Sweep.Status.READY, Sweep.Status.SENT)
    _expect(tx, config, hot, sweep.amount)
    if sweep.sweep_tx is not None and sweep.sweep_tx.nonce != tx["nonce"]:
        raise SignRefused(f"sweep {sweep.pk} has its transaction already")
    return sweep


def _stored_sweep(config: EvmConfig, ref: str, own: Own, *statuses: str) -> Sweep:
    """The sweep `ref` in one of `statuses`, whose address is the one the signer's seed derives at its
    index (a row naming any other address is refused, whatever else it says)."""
    pk = ref.removeprefix("sweep:")
    sweep = Sweep.objects.filter(Q(pk=pk) if pk.isdigit() else Q(pk__in=[]), code=config.code).first()
    if sweep is None or sweep.status not in statuses:
        raise SignRefused(f"no sweep {ref!r} of {config.code} waiting for this step")
    index = sweep.derivation_index
    if index < 0 or index >= 2**31 or sweep.address.lower() != own(RECEIVING, index).lower():
        raise SignRefused(
            f"sweep {sweep.pk} names {sweep.address}, not the deposit address {index} of the signer's seed"
        )
    return sweep
