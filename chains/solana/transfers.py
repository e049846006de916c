"""What a confirmed transaction paid to an address: the exact lamports (from the transaction's meta), who sent
them, the Solana Pay references and the memo.

The amount is the address's balance after the transaction less its balance before (meta's postBalances -
preBalances): it counts every way lamports can arrive (a plain transfer, several, one made by a program
in an inner instruction) and nothing that did not arrive. The instructions only say who and why:
- `senders`: the `from` of each top-level system-program Transfer to the address;
- `references`: the keys a Solana Pay wallet appends to that Transfer, read-only and not signing (the
  spec's `reference`; the keys getSignaturesForAddress(reference) finds the transaction by);
- `memos`: the text of each top-level instruction of a memo program (SPL Memo v1 or v3; wallets use v3),
  in order. A memo program refuses data that is not UTF-8, so a landed memo is text.
A failed transaction (`err`) paid nothing: it has no transfer, whatever its instructions say.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from chains.solana.results import ConfirmedTransaction

SYSTEM_PROGRAM = "11111111111111111111111111111111"
MEMO_V1 = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"
MEMO_V3 = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
MEMO_PROGRAMS = frozenset({MEMO_V1, MEMO_V3})
_TRANSFER = struct.pack("<I", 2)  # SystemInstruction::Transfer { lamports: u64 }
_MEMO_HEAD = re.compile(rb"\[(\d{1,5})\] ")
_UNPARSEABLE = b"(unparseable)"


class UnreadableTransaction(Exception):
    """The node gave the transaction without its meta (no balances): what it paid cannot be known."""


@dataclass(frozen=True)
class Received:
    """Lamports that `address` received in transaction `signature` (always more than 0)."""

    signature: str
    slot: int
    block_time: int | None
    address: str
    lamports: int
    senders: tuple[str, ...]
    references: tuple[str, ...]
    memos: tuple[str, ...]


def received(transaction: ConfirmedTransaction, address: str) -> Received | None:
    """What `transaction` paid to `address`; None if it failed, or `address` did not gain lamports by it."""
    meta = transaction.meta
    if meta is None:
        raise UnreadableTransaction(f"{transaction.signature}: the node gave no meta")
    keys = transaction.account_keys
    if meta.err is not None or address not in keys:
        return None
    at = keys.index(address)
    lamports = meta.post_balances[at] - meta.pre_balances[at]
    if lamports <= 0:
        return None
    senders: list[str] = []
    references: list[str] = []
    for instruction in transaction.instructions:
        if keys[instruction.program_id_index] != SYSTEM_PROGRAM or not _is_transfer(instruction.data):
            continue
        if len(instruction.accounts) < 2 or instruction.accounts[1] != at:
            continue
        _append_new(senders, keys[instruction.accounts[0]])
        for index in instruction.accounts[2:]:
            if not transaction.is_signer(index) and not transaction.is_writable(index):
                _append_new(references, keys[index])
    return Received(
        signature=transaction.signature,
        slot=transaction.slot,
        block_time=transaction.block_time,
        address=address,
        lamports=lamports,
        senders=tuple(senders),
        references=tuple(references),
        memos=memos(transaction),
    )


def memos(transaction: ConfirmedTransaction) -> tuple[str, ...]:
    """The text of each top-level memo instruction (v1 or v3), in order."""
    keys = transaction.account_keys
    return tuple(
        instruction.data.decode("utf-8", errors="replace")
        for instruction in transaction.instructions
        if keys[instruction.program_id_index] in MEMO_PROGRAMS
    )


def memo_texts(memo: str | None) -> tuple[str, ...]:
    """The memos of getSignaturesForAddress's `memo` field: Agave writes each as "[len] text" (len: the
    data's bytes) and joins them with "; ", so a memo may itself hold "; " and still be read back whole.
    One it could not decode is written "(unparseable)" and read back so. ValueError if it is not that."""
    if memo is None:
        return ()
    data, texts, at = memo.encode(), [], 0
    while True:
        head = _MEMO_HEAD.match(data, at)
        if head is None:
            raise ValueError(f"not Agave's memo field: {memo!r}")
        start = head.end()
        end = start + int(head[1])
        if not _piece_ends(data, end):
            end = start + len(_UNPARSEABLE)
            if data[start:end] != _UNPARSEABLE or not _piece_ends(data, end):
                raise ValueError(f"not Agave's memo field: {memo!r}")
        try:
            texts.append(data[start:end].decode())
        except UnicodeDecodeError:
            raise ValueError(f"not Agave's memo field: {memo!r}") from None
        if end == len(data):
            return tuple(texts)
        at = end + len(b"; ")


def _piece_ends(data: bytes, end: int) -> bool:
    return end == len(data) or data.startswith(b"; [", end)


def _is_transfer(data: bytes) -> bool:
    return len(data) == 12 and data[:4] == _TRANSFER


def _append_new(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)
