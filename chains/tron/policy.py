"""What the TRON signer agrees to sign: the transaction's own bytes, read here, against the stated purpose.

A request (an UnsignedTx's payload, `signing_request` writes it) is JSON: `purpose`, `raw_data_hex` (the
`Transaction.raw` bytes to sign, never a hash) and, by purpose, `ref` or `index`:
- `payout` (`ref` "withdrawal:<uid>"): from the hot address, paying one processing withdrawal exactly its
  address and amount (the token's `transfer(to, amount)` on the code's contract, or TRX), within
  `payout_limit` (and `daily_limit`, and only once while its transaction may still be mined: the journal);
- `sweep` (`index`): from the deposit address the seed derives at `index` to the hot address, of the code's
  token contract (or TRX);
- `delegate` / `undelegate` (`index`): Stake 2.0 resource delegation from the hot address (or the seed's
  resource account, `resource_index`) to the deposit address at `index`, unlocked; and back;
- `topup` (`index`): TRX from the hot address to the deposit address at `index`, at most `topup_cap`
  (and `topup_daily_limit` a UTC day: the journal); `activate` (`index`): AccountCreateContract of it.
Every transaction holds exactly one contract under the owner permission, no memo, a TAPOS reference, a
`fee_limit` within `fee_limit_cap`, and expires in the future and at most 24 h from now. The bytes are
read by the strict decoder (chains.tron.proto): bytes it cannot read fully are refused. The addresses are
never taken from the database or the request: the hot, resource and deposit addresses are what the
signer derives from its own seed (`own`: (BIP-44 chain, index) -> T...).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from chains import payout_book
from chains.base import PayoutRefused
from chains.tron import address
from chains.tron.proto import (
    AccountCreateContract,
    AccountType,
    ContractMessage,
    DelegateResourceContract,
    ProtoError,
    RawData,
    TransferContract,
    TriggerSmartContract,
    UnDelegateResourceContract,
    decode_raw,
)
from chains.tron.transaction import decode_trc20_transfer, trc20_transfer_data, txid
from chains.tron.units import TRX_DECIMALS, from_units, to_units
from core.money import number_text

HOT = (1, 0)  # (BIP-44 chain, index) of the hot address: m/44'/195'/0'/1/0
RECEIVING = 0  # the BIP-44 chain of the deposit addresses: m/44'/195'/0'/0/<index>
MAX_INDEX = 2**31 - 1
MAX_AHEAD_MS = 24 * 3600 * 1000  # java-tron refuses an expiration further ahead
PURPOSES = ("payout", "sweep", "delegate", "undelegate", "topup", "activate")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")

# The signer's own derivation: the T... address of m/44'/195'/0'/<chain>/<index> of its seed.
Own = Callable[[int, int], str]


class SignRefused(PayoutRefused):
    """The request is not what the signer decoded, matches no stored plan, or breaks a limit: nothing is
    signed."""

    refused_by = "The TRON signer"


@dataclass(frozen=True)
class TronRules:
    """What the TRON signer allows for one payment code: the backend's configuration supplies these (a
    deployment's caps, its token's contract), the signer never takes them from a request.

    `contract` is the T... address of the code's TRC-20 contract (None: the code is TRX itself) and
    `decimals` its units; `fee_limit_cap` the most sun any signed transaction may burn for energy
    (`fee_limit`); `topup_cap` the most TRX one top-up sends and `topup_daily_limit` the most TRX of
    top-ups of the code a UTC day; `payout_limit` the most one payout pays and `daily_limit` the most the
    code's payouts pay a UTC day (None: no limit); `resource_index` the index on the internal chain
    (m/44'/195'/0'/1/<i>) of the staked resource account that delegates energy, when the seed holds its key
    (None: only the hot address delegates)."""

    code: str
    contract: str | None
    fee_limit_cap: int
    topup_cap: Decimal
    topup_daily_limit: Decimal
    decimals: int = TRX_DECIMALS
    payout_limit: Decimal | None = None
    daily_limit: Decimal | None = None
    resource_index: int | None = None


@dataclass(frozen=True)
class Approved:
    """What to sign with: the key at m/44'/195'/0'/<chain>/<index>, whose address is `sender`, the bytes
    read and their txid; and what the journal keeps of it (chains.tron.signer.TronJournal)."""

    chain: int
    index: int
    sender: str
    raw: RawData
    raw_bytes: bytes
    txid: str
    code: str
    purpose: str
    ref: str  # "withdrawal:<uid>" for a payout; else the txid (each counts on its own)
    amount: Decimal  # what it moves: the code's amount (a payout), TRX (a top-up), else 0
    daily_limit: Decimal | None = None


def signing_request(
    purpose: str, raw_bytes: bytes, *, ref: str | None = None, index: int | None = None
) -> str:
    """The payload of an UnsignedTx asking the TRON signer to sign `raw_bytes` (a `Transaction.raw_bytes`)
    for `purpose`: a payout names the withdrawal (`ref`), anything else the deposit index."""
    request: dict[str, Any] = {"purpose": purpose, "raw_data_hex": raw_bytes.hex()}
    if ref is not None:
        request["ref"] = ref
    if index is not None:
        request["index"] = index
    return json.dumps(request, sort_keys=True)


def check(code: str, payload: str, rules: TronRules, own: Own, *, now_ms: int | None = None) -> Approved:
    """Approve a signing request or raise SignRefused with the reason; `own` derives the signer's
    addresses from its seed, `rules` are the code's limits."""
    if rules.code != code:
        raise SignRefused(f"the rules of {rules.code} are not those of {code}")
    try:
        request = json.loads(payload)
    except (TypeError, ValueError):
        raise SignRefused("a request is a JSON object") from None
    if not isinstance(request, dict):
        raise SignRefused("a request is a JSON object")
    raw_hex = request.get("raw_data_hex")
    if not isinstance(raw_hex, str) or not _HEX.fullmatch(raw_hex):
        raise SignRefused("a request carries the transaction's raw_data_hex (a bare hash is never signed)")
    raw_bytes = bytes.fromhex(raw_hex)
    try:
        raw = decode_raw(raw_bytes)
    except ProtoError as exc:
        raise SignRefused(f"the transaction cannot be read fully: {exc}") from None
    message = _one_contract(raw, rules, now_ms)
    purpose = request.get("purpose")
    hot = own(*HOT)

    def approved(
        key: tuple[int, int],
        sender: str,
        ref: str,
        amount: Decimal = Decimal(0),
        limit: Decimal | None = None,
    ) -> Approved:
        return Approved(
            *key, sender, raw, raw_bytes, txid(raw_bytes), rules.code, str(purpose), ref, amount, limit
        )

    if purpose == "payout":
        ref = str(request.get("ref", ""))
        return approved(HOT, hot, ref, _payout(rules, message, ref, hot), rules.daily_limit)
    if purpose not in PURPOSES:
        raise SignRefused(f"unknown purpose {purpose!r}: only {', '.join(PURPOSES)} are signed")
    index = request.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= MAX_INDEX:
        raise SignRefused(f"a {purpose} names a deposit index from 0 to {MAX_INDEX}, not {index!r}")
    deposit, each = own(RECEIVING, index), txid(raw_bytes)  # each of these counts on its own
    if purpose == "sweep":
        _sweep(rules, message, deposit, hot)
        return approved((RECEIVING, index), deposit, each)
    if purpose == "topup":
        return approved(HOT, hot, each, _topup(rules, message, deposit, hot), rules.topup_daily_limit)
    if purpose == "activate":
        _expect(message, AccountCreateContract(hot, deposit, AccountType.Normal), "an activation")
        return approved(HOT, hot, each)
    key = _stake_owner(rules, message, own)
    if purpose == "delegate":
        _delegate(message, deposit)
    else:
        _undelegate(message, deposit)
    return approved(key, own(*key), each)


def _one_contract(raw: RawData, rules: TronRules, now_ms: int | None) -> ContractMessage:
    """The one contract of `raw`, after the checks every transaction passes."""
    if len(raw.contracts) != 1:
        raise SignRefused(f"a transaction holds exactly one contract, not {len(raw.contracts)}")
    if raw.contracts[0].permission_id != 0:
        raise SignRefused("a transaction is signed under the owner permission only (Permission_id 0)")
    if raw.data:
        raise SignRefused("a transaction carries no memo")
    if len(raw.ref_block_bytes) != 2 or len(raw.ref_block_hash) != 8 or raw.ref_block_num:
        raise SignRefused("a transaction names its reference block (2 ref_block_bytes, 8 ref_block_hash)")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if raw.expiration <= now:
        raise SignRefused(f"the transaction expired at {raw.expiration} (now {now})")
    if raw.expiration > now + MAX_AHEAD_MS:
        raise SignRefused(f"the transaction expires at {raw.expiration}, more than 24 h from now ({now})")
    if not 0 <= raw.fee_limit <= rules.fee_limit_cap:
        raise SignRefused(f"fee_limit {raw.fee_limit} sun is over the cap {rules.fee_limit_cap} sun")
    return raw.contracts[0].parameter


def _transfer(rules: TronRules, owner: str, to: str, amount: Decimal) -> ContractMessage:
    """The contract that moves exactly `amount` of the code from `owner` to `to`, and nothing else."""
    try:
        units = to_units(amount, rules.decimals)
    except ValueError as exc:
        raise SignRefused(str(exc)) from None
    if rules.contract is None:
        return TransferContract(owner, to, units)
    return TriggerSmartContract(owner, rules.contract, trc20_transfer_data(to, units))


def _expect(message: ContractMessage, want: ContractMessage, what: str) -> None:
    if message != want:
        raise SignRefused(f"the transaction is not {what} as the signer's rules and the stored plan say")


def _payout(rules: TronRules, message: ContractMessage, ref: str, hot: str) -> Decimal:
    payout = payout_book.payable(rules.code, ref, SignRefused)
    try:
        to = address.validate(payout.to_address)
    except address.InvalidTronAddress as exc:
        raise SignRefused(f"withdrawal {payout.uid}: {exc}") from None
    _expect(message, _transfer(rules, hot, to, payout.amount), f"the payout of withdrawal {payout.uid}")
    payout_book.within_limit(payout, rules.code, rules.payout_limit, SignRefused)
    return payout.amount  # the day's total is the journal's (chains.tron.signer)


def _sweep(rules: TronRules, message: ContractMessage, deposit: str, hot: str) -> None:
    refused = SignRefused(f"a sweep moves {rules.code} from the deposit address to the hot address only")
    if rules.contract is None:
        if not isinstance(message, TransferContract) or message.amount <= 0:
            raise refused
        want: ContractMessage = TransferContract(deposit, hot, message.amount)
    else:
        if not isinstance(message, TriggerSmartContract):
            raise refused
        try:
            to, units = decode_trc20_transfer(message.data)
        except ValueError as exc:
            raise SignRefused(f"a sweep calls transfer(to, amount) only: {exc}") from None
        if to != hot or units <= 0:
            raise refused
        want = TriggerSmartContract(deposit, rules.contract, message.data)
    _expect(message, want, f"a sweep of {rules.code} from {deposit} to the hot address")


def _topup(rules: TronRules, message: ContractMessage, deposit: str, hot: str) -> Decimal:
    if not isinstance(message, TransferContract) or message.amount <= 0:
        raise SignRefused("a top-up sends TRX only")
    _expect(message, TransferContract(hot, deposit, message.amount), "a top-up from the hot address")
    sent = from_units(message.amount)
    if sent > rules.topup_cap:
        raise SignRefused(
            f"the top-up of {number_text(sent)} TRX is over the cap {number_text(rules.topup_cap)}"
        )
    return sent


def _stake_owner(rules: TronRules, message: ContractMessage, own: Own) -> tuple[int, int]:
    """The (chain, index) of the key a delegation or undelegation is signed with: the hot address's, or
    the resource account's when the rules name one."""
    keys = [HOT] + ([] if rules.resource_index is None else [(HOT[0], rules.resource_index)])
    owner = getattr(message, "owner_address", None)
    for key in keys:
        if owner == own(*key):
            return key
    raise SignRefused("a delegation is made by the hot address or the seed's resource account only")


def _delegate(message: ContractMessage, deposit: str) -> None:
    if not isinstance(message, DelegateResourceContract) or message.balance <= 0:
        raise SignRefused("a delegation is a DelegateResourceContract")
    if message.lock or message.lock_period:
        raise SignRefused("a delegation is never locked: it is taken back once the sweep is mined")
    want = DelegateResourceContract(message.owner_address, message.resource, message.balance, deposit)
    _expect(message, want, "a delegation to the deposit address")


def _undelegate(message: ContractMessage, deposit: str) -> None:
    if not isinstance(message, UnDelegateResourceContract) or message.balance <= 0:
        raise SignRefused("an undelegation is an UnDelegateResourceContract")
    want = UnDelegateResourceContract(message.owner_address, message.resource, message.balance, deposit)
    _expect(message, want, "an undelegation from the deposit address")
