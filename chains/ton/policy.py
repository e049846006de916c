"""What the TON signer agrees to sign: the wallet's unsigned message, read here, against the stored payout.

A request (an UnsignedTx's payload, `signing_request` writes it) is JSON: `purpose` "payout", `ref`
("withdrawal:<uid>") and `message`, the base64 BOC of the house wallet v4R2's unsigned signing message:
wallet_id, valid_until, seqno, op, then one (send mode, internal message) pair. Never a hash: the signer
signs the hash of the cell it decoded itself.

It is approved only when:
- it is a simple send (op 0) of the house wallet's own `wallet_id`, whose `valid_until` is in the future
  and at most `MAX_AHEAD_SECONDS` ahead (by the signer's clock), holding exactly one internal message sent
  with mode 3 (pay the fees apart, ignore errors): never 128 (the whole balance) nor 64, never a second
  message;
- the internal message pays one processing withdrawal of the code (chains.payout_book; house refunds of
  unrouted deposits too) exactly its address and amount, with its tag as the text comment (or no body),
  bounceable as the address's form says (raw `0:…` bounceable), or non-bounceable once the withdrawal's
  payment bounced and a person approved sending it so; no state init, no extra currencies;
- the withdrawal is within `payout_limit` (the day's total, `daily_limit`, and the one-message-at-a-time
  rule are the journal's: chains.ton.signer);
- and, as a last check, the message the signer builds from those facts is bit for bit the one asked for:
  anything more in it (a field the decoder does not look at) is refused.
The house address is never taken from the request: the signer derives it from its own key.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pytoniq_core import Address, Cell

from chains import payout_book
from chains.base import PayoutRefused
from chains.ton.messages import ParsedMessage, parse_message, raw_address
from chains.ton.units import from_nanotons, to_nanotons
from chains.ton.wallet import DEFAULT_SEND_MODE, DEFAULT_WALLET_ID, Transfer, signing_message
from core.money import number_text

PURPOSE = "payout"
MAX_AHEAD_SECONDS = 3600  # the builder asks for minutes (chains.ton.payouts.VALID_SECONDS)
SIGNING_BITS = 32 + 32 + 32 + 8 + 8  # wallet_id, valid_until, seqno, op, mode
SIMPLE_SEND = 0


class SignRefused(PayoutRefused):
    """The request is not what the signer decoded, matches no stored payout, or breaks a limit: nothing is
    signed."""

    refused_by = "The TON signer"


@dataclass(frozen=True)
class TonRules:
    """What the TON signer allows for the code: `payout_limit` the most one payout pays, `daily_limit` the
    most all payouts of the code pay a UTC day (None: no limit). From the configuration, never a request."""

    code: str
    payout_limit: Decimal | None = None
    daily_limit: Decimal | None = None


@dataclass(frozen=True)
class Decoded:
    """The signing message as the wallet will read it."""

    cell: Cell
    wallet_id: int
    valid_until: int
    seqno: int
    mode: int
    message: ParsedMessage


@dataclass(frozen=True)
class Approved:
    """What to sign (`transfer` at `seqno` until `valid_until`) and what the journal keeps of it."""

    code: str
    ref: str
    transfer: Transfer
    seqno: int
    valid_until: int
    amount: Decimal
    daily_limit: Decimal | None


def signing_request(ref: str, unsigned: Cell) -> str:
    """The payload of an UnsignedTx asking the TON signer to sign the wallet's `unsigned` message paying
    the withdrawal `ref`."""
    message = base64.b64encode(unsigned.to_boc()).decode()
    return json.dumps({"purpose": PURPOSE, "ref": ref, "message": message}, sort_keys=True)


def decode(text: Any) -> Decoded:
    """The unsigned signing message of a wallet v4R2 simple send, read strictly."""
    if not isinstance(text, str):
        raise SignRefused(
            "a request carries the unsigned message as a base64 BOC (a bare hash is never signed)"
        )
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SignRefused("the message is not base64") from None
    try:
        cell = Cell.one_from_boc(data)
    except Exception:  # pytoniq raises many kinds on bytes that are no BOC (a bare 32-byte hash, say)
        raise SignRefused("the message is not a BOC of one cell (a bare hash is never signed)") from None
    if cell.is_exotic:
        raise SignRefused("the message is an exotic cell")
    if len(cell.refs) != 1:
        raise SignRefused(f"a payout sends exactly one internal message, not {len(cell.refs)}")
    if len(cell.bits) != SIGNING_BITS:
        raise SignRefused(
            "the message is not a wallet v4R2 simple send of one message (wallet_id, valid_until, seqno, "
            f"op, mode: {SIGNING_BITS} bits, not {len(cell.bits)})"
        )
    head = cell.begin_parse()
    wallet_id, valid_until, seqno = head.load_uint(32), head.load_uint(32), head.load_uint(32)
    op, mode = head.load_uint(8), head.load_uint(8)
    if op != SIMPLE_SEND:
        raise SignRefused(f"only a simple send (op 0) is signed, not op {op}")
    try:
        message = parse_message(cell.refs[0])
    except Exception:  # pytoniq raises many kinds on a cell that is no message
        raise SignRefused("the internal message cannot be read") from None
    return Decoded(cell, wallet_id, valid_until, seqno, mode, message)


def check(code: str, payload: str, rules: TonRules, *, now: int) -> Approved:
    """Approve a signing request or raise SignRefused with the reason; `now` is the signer's clock (unix
    seconds), `rules` the code's limits."""
    if rules.code != code:
        raise SignRefused(f"the rules of {rules.code} are not those of {code}")
    try:
        request = json.loads(payload)
    except (TypeError, ValueError):
        raise SignRefused("a request is a JSON object") from None
    if not isinstance(request, dict):
        raise SignRefused("a request is a JSON object")
    if request.get("purpose") != PURPOSE:
        raise SignRefused(f"the TON signer signs payouts only, not {request.get('purpose')!r}")
    decoded = decode(request.get("message"))
    if decoded.wallet_id != DEFAULT_WALLET_ID:
        raise SignRefused(f"wallet_id {decoded.wallet_id} is not the house wallet's {DEFAULT_WALLET_ID}")
    if decoded.valid_until <= now:
        raise SignRefused(f"the message expired at {decoded.valid_until} (now {now})")
    if decoded.valid_until > now + MAX_AHEAD_SECONDS:
        raise SignRefused(
            f"the message is valid until {decoded.valid_until}, more than {MAX_AHEAD_SECONDS} s from now "
            f"({now})"
        )
    if decoded.mode != DEFAULT_SEND_MODE:
        raise SignRefused(f"a payout is sent with mode {DEFAULT_SEND_MODE}, not {decoded.mode}")
    ref = request.get("ref")
    if not isinstance(ref, str):
        raise SignRefused("a payout names its withdrawal (ref)")
    transfer, amount = _payout(rules, decoded.message, ref)
    rebuilt = signing_message(transfer, seqno=decoded.seqno, valid_until=decoded.valid_until).end_cell()
    if rebuilt.hash != decoded.cell.hash:
        raise SignRefused(
            f"the message holds more than the payout of {ref} (it is not the one built from it)"
        )
    return Approved(code, ref, transfer, decoded.seqno, decoded.valid_until, amount, rules.daily_limit)


def _payout(rules: TonRules, message: ParsedMessage, ref: str) -> tuple[Transfer, Decimal]:
    """The transfer that pays withdrawal `ref` exactly, checked against `message`; and its amount."""
    payout = payout_book.payable(rules.code, ref, SignRefused)
    if message.kind != "internal" or message.has_init:
        raise SignRefused("a payout is one internal message, without a state init")
    try:
        to = Address(payout.to_address)
        units = to_nanotons(payout.amount)
    except Exception as exc:  # a stored address pytoniq cannot read, an amount past the nanoton
        raise SignRefused(f"withdrawal {payout.uid} cannot be paid on TON: {exc}") from None
    if message.destination != raw_address(to):
        raise SignRefused(f"the message pays {message.destination}, not withdrawal {payout.uid}'s address")
    if message.value != units:
        raise SignRefused(
            f"the message pays {number_text(from_nanotons(message.value))} TON, not withdrawal "
            f"{payout.uid}'s {number_text(payout.amount)}"
        )
    transfer = Transfer(
        destination=payout.to_address,
        amount=units,
        comment=payout.tag or None,
        bounce=False if payout.bounced else None,
    )
    if message.bounce != transfer.bounceable():
        want = "bounceable" if transfer.bounceable() else "non-bounceable"
        raise SignRefused(f"the payout of withdrawal {payout.uid} is sent {want}")
    wanted_comment = payout.tag.encode() if payout.tag else None
    if message.comment_bytes != wanted_comment or (wanted_comment is None and message.op is not None):
        raise SignRefused(f"the message's body is not withdrawal {payout.uid}'s comment")
    payout_book.within_limit(payout, rules.code, rules.payout_limit, SignRefused)
    return transfer, payout.amount
