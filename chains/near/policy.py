"""What the NEAR signer agrees to sign: the transaction's own borsh bytes, read here, against the stated
purpose.

A request (an UnsignedTx's payload, `signing_request` writes it) is JSON: `purpose`, `tx` (the base64 of
the borsh `Transaction`, what the signature's hash covers: never a hash) and, by purpose, `ref` or `index`.
The bytes are read by the strict decoder (chains.near.transaction: V0 only, Transfer and DeleteAccount only,
no trailing byte), and the signer signs the hash of what it decoded. It approves only:
- `payout` (`ref` "withdrawal:<uid>", a merchant's withdrawal or a house refund alike: chains.payout_book):
  signed by the hot account (`NearRules.account`, from the configuration, never the request) with the
  signer's own hot key, exactly one Transfer to the stored processing withdrawal's address of exactly its
  amount in yoctoNEAR, within `payout_limit` (the day's `daily_limit`, and one transaction a withdrawal
  while the earlier may still land, are the journal's: chains.near.signer);
- `sweep` (`index`): the deposit account of pool key `index` (the implicit account of the key the signer
  derives from its own seed at that index), signed by that key, deleting itself with exactly one
  DeleteAccount whose beneficiary is the hot account; and only while chains.sweeps has that account's sweep
  open (ready to be sent, or sent).
Every transaction has a nonce above 0. Its block_hash is 32 bytes (the decoder's); how old that block is the
signer cannot tell: a block hash older than the chain's validity period makes the transaction invalid, which
is the journal's "can no longer land", asked of the node.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from chains import payout_book
from chains.base import PayoutRefused
from chains.models import Sweep
from chains.near import transaction
from chains.near.transaction import DeleteAccount, NearCodecError, Transaction, Transfer
from chains.near.units import to_yocto
from core.money import number_text

PURPOSES = ("payout", "sweep")
MAX_INDEX = 2**31 - 1  # pool keys are hardened children: m/44'/397'/1'/<index>'
_FIELDS = {"payout": {"purpose", "tx", "ref"}, "sweep": {"purpose", "tx", "index"}}

# The signer's own derivation: the public key of pool key `index` of its seed.
PoolKey = Callable[[int], bytes]


class SignRefused(PayoutRefused):
    """The request is not what the signer decoded, matches no stored payout or open sweep, or breaks a
    limit: nothing is signed."""

    refused_by = "The NEAR signer"


@dataclass(frozen=True)
class NearRules:
    """What the NEAR signer allows for the code, from the configuration (never a request): `account` the
    hot account, which pays the payouts and receives the sweeps; `payout_limit` the most one payout pays and
    `daily_limit` the most the code's payouts pay a UTC day (None: no limit)."""

    code: str
    account: str
    payout_limit: Decimal | None = None
    daily_limit: Decimal | None = None


@dataclass(frozen=True)
class Approved:
    """What to sign: `tx` with the hot key (`index` None) or pool key `index`; and what the journal keeps of
    a payout (its `ref`, the `amount` it moves, the code's `daily_limit`)."""

    code: str
    purpose: str
    tx: Transaction
    index: int | None
    ref: str
    amount: Decimal = Decimal(0)
    daily_limit: Decimal | None = None


def signing_request(
    purpose: str, tx: Transaction, *, ref: str | None = None, index: int | None = None
) -> str:
    """The payload of an UnsignedTx asking the NEAR signer to sign `tx` for `purpose`: a payout names the
    withdrawal (`ref`), a sweep the pool index of the deposit account (`index`)."""
    request: dict[str, Any] = {"purpose": purpose, "tx": base64.b64encode(tx.encode()).decode()}
    if ref is not None:
        request["ref"] = ref
    if index is not None:
        request["index"] = index
    return json.dumps(request, sort_keys=True)


def check(code: str, payload: str, rules: NearRules, hot_key: bytes, pool_key: PoolKey) -> Approved:
    """Approve a signing request or raise SignRefused with the reason. `hot_key` is the signer's own hot
    public key, `pool_key` derives its pool keys; `rules` are the code's."""
    if rules.code != code:
        raise SignRefused(f"the rules of {rules.code} are not those of {code}")
    try:
        request = json.loads(payload)
    except (TypeError, ValueError):
        raise SignRefused("a request is a JSON object") from None
    if not isinstance(request, dict):
        raise SignRefused("a request is a JSON object")
    purpose = request.get("purpose")
    if purpose not in PURPOSES:
        raise SignRefused(f"unknown purpose {purpose!r}: only {', '.join(PURPOSES)} are signed")
    extra = set(request) - _FIELDS[purpose]
    if extra:
        raise SignRefused(f"a {purpose} request has no {', '.join(sorted(extra))}")
    tx = decode(request.get("tx"))
    if tx.nonce == 0:
        raise SignRefused("nonce 0 is never valid: an access key's nonces start above it")
    if purpose == "payout":
        ref = request.get("ref")
        if not isinstance(ref, str):
            raise SignRefused("a payout names its withdrawal (ref)")
        amount = _payout(rules, tx, ref, hot_key)
        return Approved(code, purpose, tx, None, ref, amount, rules.daily_limit)
    index = request.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= MAX_INDEX:
        raise SignRefused(f"a sweep names a pool index from 0 to {MAX_INDEX}, not {index!r}")
    _sweep(rules, tx, index, pool_key(index))
    return Approved(code, purpose, tx, index, tx.txid())


def decode(text: Any) -> Transaction:
    """The borsh Transaction of a request's `tx`, read strictly."""
    if not isinstance(text, str):
        raise SignRefused(
            "a request carries the transaction's borsh bytes in base64 (a hash is never signed)"
        )
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SignRefused("the transaction is not base64") from None
    try:
        return Transaction.decode(data)
    except NearCodecError as exc:
        raise SignRefused(f"the transaction cannot be read: {exc}") from None


def _payout(rules: NearRules, tx: Transaction, ref: str, hot_key: bytes) -> Decimal:
    """The amount of withdrawal `ref`, once `tx` is exactly its payout from the hot account."""
    if tx.signer_id != rules.account:
        raise SignRefused(f"a payout is signed by the hot account {rules.account}, not {tx.signer_id}")
    if tx.public_key != hot_key:
        raise SignRefused("a payout is signed with the signer's hot key, not another")
    action = tx.actions[0]
    if len(tx.actions) != 1 or not isinstance(action, Transfer):
        raise SignRefused(f"a payout is exactly one Transfer, not {_names(tx)}")
    payout = payout_book.payable(rules.code, ref, SignRefused)
    try:
        yocto = to_yocto(payout.amount)
    except ValueError as exc:
        raise SignRefused(f"withdrawal {payout.uid} cannot be paid on NEAR: {exc}") from None
    if tx.receiver_id != payout.to_address:
        raise SignRefused(f"the transaction pays {tx.receiver_id}, not withdrawal {payout.uid}'s address")
    if action.deposit != yocto:
        raise SignRefused(
            f"the transaction pays {action.deposit} yoctoNEAR, not withdrawal {payout.uid}'s "
            f"{number_text(payout.amount)} NEAR ({yocto})"
        )
    payout_book.within_limit(payout, rules.code, rules.payout_limit, SignRefused)
    return payout.amount  # the day's total is the journal's (chains.near.signer)


def _sweep(rules: NearRules, tx: Transaction, index: int, key: bytes) -> None:
    """`tx` deletes the deposit account of pool key `index` (public `key`) into the hot account, and that
    account's sweep is open."""
    account = transaction.implicit_account(key)
    if tx.signer_id != account or tx.receiver_id != account:
        raise SignRefused(
            f"a sweep of index {index} is signed by and sent to its deposit account {account}, not "
            f"{tx.signer_id} to {tx.receiver_id}"
        )
    if tx.public_key != key:
        raise SignRefused(f"a sweep of index {index} is signed with pool key {index}, not another")
    if tx.actions != (DeleteAccount(rules.account),):
        raise SignRefused(
            f"a sweep is exactly one DeleteAccount into the hot account {rules.account}, not {_names(tx)}"
        )
    open_sweep = Sweep.objects.filter(
        code=rules.code,
        address=account,
        derivation_index=index,
        status__in=[Sweep.Status.READY, Sweep.Status.SENT],
    )
    if not open_sweep.exists():
        raise SignRefused(f"no sweep of {account} (index {index}) is open")


def _names(tx: Transaction) -> str:
    def name(action: Transfer | DeleteAccount) -> str:
        if isinstance(action, DeleteAccount):
            return f"DeleteAccount into {action.beneficiary_id}"
        return "Transfer"

    return ", ".join(name(action) for action in tx.actions)
