"""What the Solana signer agrees to sign: the message's own bytes, read here, against the stored withdrawal.

A request (an UnsignedTx's payload, `signing_request` writes it) is JSON: `purpose` ("payout", the only
one: Solana has no sweeps, every payment arrives at the hot address), `message` (the legacy message's
serialized bytes in base64: what the signature covers, never a hash), `ref` ("withdrawal:<uid>", a
merchant's withdrawal or a house refund alike) and `last_valid_block_height` (the builder's, from
getLatestBlockhash; the journal never trusts it alone, chains.solana.signer).

The message is read by solders and must be exactly `payout_message`, rebuilt here from what was read:
- its fee payer, and only signer, is the hot address (the signer's own key, never the request's);
- its instructions are SetComputeUnitLimit (1 to MAX_UNIT_LIMIT units), SetComputeUnitPrice (the
  priority fee, price times limit, within the code's `priority_fee_cap`) and one System transfer from the
  hot address to the withdrawal's address of exactly its amount in lamports, in that order: no other
  instruction, account or signer (no nonce advance, no assign, no token program, no memo);
- the withdrawal exists for this code, is processing, is paid by no other live transaction, pays that
  address that amount, and is within `payout_limit` (the day's `daily_limit`, and a second transaction of
  the same withdrawal, are the journal's).
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from solders.compute_budget import ID as COMPUTE_BUDGET_PROGRAM
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import AccountMeta, CompiledInstruction, Instruction
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM
from solders.system_program import TransferParams, decode_transfer, transfer

from chains import payout_book
from chains.base import PayoutRefused
from chains.solana.units import from_lamports, to_lamports
from core.money import number_text

PAYOUT = "payout"
MAX_UNIT_LIMIT = 10_000  # a payout uses 450 compute units (150 each instruction)
MICRO_LAMPORTS = 1_000_000  # a compute-unit price is in micro-lamports a unit
LAMPORTS_PER_SIGNATURE = 5_000  # the base fee of a transaction's one signature
_SET_LIMIT, _SET_PRICE = 2, 3  # ComputeBudgetInstruction's tags
_TRANSFER = struct.pack("<I", 2)  # SystemInstruction::Transfer's tag (then the u64 lamports)
_SMALLEST_MESSAGE = 65  # a bare hash (32 bytes) or a signature (64) is never a message


class SignRefused(PayoutRefused):
    """The request is not what the signer decoded, matches no stored plan, or breaks a limit: nothing is
    signed."""

    refused_by = "The Solana signer"


@dataclass(frozen=True)
class SolanaRules:
    """What the Solana signer allows for one payment code, from the deployment's configuration, never from
    a request: `priority_fee_cap` the most lamports of priority fee one transaction may pay;
    `payout_limit` the most one payout pays and `daily_limit` the most a UTC day's payouts pay (None: no
    limit)."""

    code: str
    priority_fee_cap: int
    payout_limit: Decimal | None = None
    daily_limit: Decimal | None = None


@dataclass(frozen=True)
class Approved:
    """A payout message the signer may sign, and what the journal keeps of it (chains.solana.signer)."""

    message: Message
    raw: bytes
    code: str
    ref: str
    amount: Decimal
    priority_fee: int  # lamports
    last_valid_block_height: int  # as the request says it: the journal keeps its own bound
    daily_limit: Decimal | None


def priority_fee(unit_limit: int, unit_price: int) -> int:
    """The lamports a transaction pays for priority: price (micro-lamports) times limit, rounded up as
    the runtime rounds it."""
    return -(-unit_limit * unit_price // MICRO_LAMPORTS)


def payout_message(
    hot: Pubkey, to: Pubkey, lamports: int, blockhash: Hash, *, unit_limit: int, unit_price: int
) -> Message:
    """The one message a payout is: compute-unit limit and price, then the transfer, paid by `hot`."""
    instructions = [
        set_compute_unit_limit(unit_limit),
        set_compute_unit_price(unit_price),
        transfer(TransferParams(from_pubkey=hot, to_pubkey=to, lamports=lamports)),
    ]
    return Message.new_with_blockhash(instructions, hot, blockhash)


def signing_request(message: Message, *, ref: str, last_valid_block_height: int) -> str:
    """The payload of an UnsignedTx asking the Solana signer to sign `message` for the withdrawal `ref`."""
    request = {
        "purpose": PAYOUT,
        "message": base64.b64encode(bytes(message)).decode(),
        "ref": ref,
        "last_valid_block_height": last_valid_block_height,
    }
    return json.dumps(request, sort_keys=True)


def check(code: str, payload: str, rules: SolanaRules, hot: Pubkey) -> Approved:
    """Approve a signing request or raise SignRefused with the reason; `hot` is the signer's own key."""
    if rules.code != code:
        raise SignRefused(f"the rules of {rules.code} are not those of {code}")
    request = _request(payload)
    raw = _bytes(request.get("message"))
    message = _message(raw)
    last_valid = request.get("last_valid_block_height")
    if isinstance(last_valid, bool) or not isinstance(last_valid, int) or last_valid < 0:
        raise SignRefused("a request names the blockhash's last_valid_block_height (a whole number)")
    keys = list(message.account_keys)
    if message.header.num_required_signatures != 1 or not keys or keys[0] != hot:
        raise SignRefused("the hot address pays the fee and is the transaction's only signer")
    if len(message.instructions) != 3:
        raise SignRefused(
            "a payout is exactly three instructions (compute-unit limit, compute-unit price, one "
            f"transfer), not {len(message.instructions)}"
        )
    limit_ix, price_ix, transfer_ix = message.instructions
    unit_limit = _budget(keys, limit_ix, _SET_LIMIT, "<I")
    unit_price = _budget(keys, price_ix, _SET_PRICE, "<Q")
    if not 1 <= unit_limit <= MAX_UNIT_LIMIT:
        raise SignRefused(f"a compute-unit limit of {unit_limit} is not 1 to {MAX_UNIT_LIMIT}")
    fee = priority_fee(unit_limit, unit_price)
    if fee > rules.priority_fee_cap:
        raise SignRefused(
            f"a priority fee of {number_text(from_lamports(fee))} SOL is over the priority_fee_cap "
            f"{number_text(from_lamports(rules.priority_fee_cap))} SOL"
        )
    sent = _transfer(message, keys, transfer_ix)
    ref = str(request.get("ref", ""))
    amount = _payout(rules, ref, sent, hot)
    want = payout_message(
        hot,
        sent["to_pubkey"],
        sent["lamports"],
        message.recent_blockhash,
        unit_limit=unit_limit,
        unit_price=unit_price,
    )
    if bytes(want) != raw:
        raise SignRefused("the message is not exactly the payout the stored plan and the signer's rules say")
    return Approved(message, raw, code, ref, amount, fee, last_valid, rules.daily_limit)


def _request(payload: str) -> dict[str, Any]:
    try:
        request = json.loads(payload)
    except (TypeError, ValueError):
        raise SignRefused("a request is a JSON object") from None
    if not isinstance(request, dict):
        raise SignRefused("a request is a JSON object")
    if request.get("purpose") != PAYOUT:
        raise SignRefused(f"unknown purpose {request.get('purpose')!r}: only payouts are signed")
    return request


def _bytes(text: Any) -> bytes:
    if not isinstance(text, str):
        raise SignRefused("a request carries the message to sign in base64 (a bare hash is never signed)")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SignRefused("the message is not base64") from None
    if len(raw) < _SMALLEST_MESSAGE:
        raise SignRefused("a request carries the whole message to sign, never a hash")
    return raw


def _message(raw: bytes) -> Message:
    if raw[0] & 0x80:
        raise SignRefused("only legacy messages are signed (no versioned message, no lookup table)")
    try:
        message = Message.from_bytes(raw)
    except Exception:  # solders raises its own errors for bytes it cannot read
        raise SignRefused("the message cannot be read") from None
    if bytes(message) != raw:
        raise SignRefused("the message cannot be read fully (bytes after it, or not in its own form)")
    count = len(message.account_keys)
    for instruction in message.instructions:
        if instruction.program_id_index >= count or any(i >= count for i in bytes(instruction.accounts)):
            raise SignRefused("an instruction names an account the message does not have")
    return message


def _budget(keys: list[Pubkey], instruction: CompiledInstruction, tag: int, form: str) -> int:
    """The value of a SetComputeUnitLimit (tag 2, u32) or SetComputeUnitPrice (tag 3, u64) instruction."""
    what = "compute-unit limit" if tag == _SET_LIMIT else "compute-unit price"
    data = bytes(instruction.data)
    size = struct.calcsize(form)
    if (
        keys[instruction.program_id_index] != COMPUTE_BUDGET_PROGRAM
        or bytes(instruction.accounts)
        or len(data) != 1 + size
        or data[0] != tag
    ):
        place = "first" if tag == _SET_LIMIT else "second"
        raise SignRefused(f"the payout's {place} instruction sets the {what}")
    value: int = struct.unpack(form, data[1:])[0]
    return value


def _transfer(message: Message, keys: list[Pubkey], compiled: CompiledInstruction) -> TransferParams:
    """The System transfer of the third instruction: from, to and lamports."""
    data = bytes(compiled.data)
    if (
        keys[compiled.program_id_index] != SYSTEM_PROGRAM
        or len(bytes(compiled.accounts)) != 2
        or data[:4] != _TRANSFER
        or len(data) != 12
    ):
        raise SignRefused("the payout's third instruction is a System transfer, and nothing else")
    accounts = [
        AccountMeta(keys[i], message.is_signer(i), _writable(message, i)) for i in bytes(compiled.accounts)
    ]
    try:
        sent = decode_transfer(Instruction(SYSTEM_PROGRAM, data, accounts))
    except Exception:  # read above as a transfer's shape; solders has the last word
        raise SignRefused("the payout's third instruction is a System transfer, and nothing else") from None
    return sent


def _writable(message: Message, index: int) -> bool:
    header, count = message.header, len(message.account_keys)
    signed = header.num_required_signatures
    if index < signed:
        return index < signed - header.num_readonly_signed_accounts
    return index < count - header.num_readonly_unsigned_accounts


def _payout(rules: SolanaRules, ref: str, sent: TransferParams, hot: Pubkey) -> Decimal:
    payout = payout_book.payable(rules.code, ref, SignRefused)
    try:
        to, lamports = Pubkey.from_string(payout.to_address), to_lamports(payout.amount)
    except ValueError as exc:
        raise SignRefused(f"withdrawal {payout.uid}: {exc}") from None
    if sent["from_pubkey"] != hot or sent["to_pubkey"] != to or sent["lamports"] != lamports:
        raise SignRefused(
            f"the transfer is not the payout of withdrawal {payout.uid}: {payout.amount} SOL from the hot "
            f"address to {payout.to_address}"
        )
    payout_book.within_limit(payout, rules.code, rules.payout_limit, SignRefused)
    return payout.amount  # the day's total is the journal's (chains.solana.signer)
