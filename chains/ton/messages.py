"""A TON transaction read from its own bytes (the `data` BOC toncenter answers), with pytoniq-core: its
account, lt and hash, whether it was aborted, and its messages: sender, value, text comment, bounce flags.

A deposit is credited from these bytes, not from toncenter's decoded fields: the `bounced` flag in particular
is in the bytes only (toncenter's v2 message has no such field). node.py checks that the JSON and the bytes
agree.

Text comments (TEP-0074's "op 0"): a body whose first 32 bits are zero, then UTF-8 text, continued in the
first reference of each cell ("snake" cells). A body that is not that has no comment (`comment` None); a
comment that is not valid UTF-8 is kept as bytes (`comment_bytes`) and `comment` is None, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytoniq_core import Address, Cell, Slice
from pytoniq_core.tlb.transaction import (
    ExternalMsgInfo,
    ExternalOutMsgInfo,
    InternalMsgInfo,
    MessageAny,
    Transaction,
)

TEXT_COMMENT_OP = 0
BOUNCED_OP = 0xFFFFFFFF
MAX_SNAKE_DEPTH = 16  # tonlib reads no deeper (vm::CellString)


class MessageParseError(ValueError):
    """The bytes are not a TON transaction or message."""


def raw_address(address: Address | None) -> str | None:
    """`wc:hex` (lowercase), the one spelling chains.addresses.route_key uses; None for no address."""
    if address is None or not isinstance(address, Address):
        return None
    return f"{address.wc}:{address.hash_part.hex()}"


@dataclass(frozen=True)
class ParsedMessage:
    kind: str  # "internal", "external-in" or "external-out"
    source: str | None  # wc:hex; None for an external-in message
    destination: str | None  # wc:hex; None for an external-out message
    value: int  # nanotons (0 for external messages)
    bounce: bool
    bounced: bool
    fwd_fee: int
    created_lt: int
    hash: bytes  # of the message cell
    body_hash: bytes
    body: Cell
    op: int | None  # the first 32 bits of the body, if it has them
    comment_bytes: bytes | None  # op 0: the text's bytes
    has_init: bool

    @property
    def comment(self) -> str | None:
        """The text comment (op 0), if the body is one and is valid UTF-8."""
        if self.comment_bytes is None:
            return None
        try:
            return self.comment_bytes.decode("utf-8")
        except UnicodeDecodeError:
            return None


@dataclass(frozen=True)
class ParsedTransaction:
    account: str  # wc:hex
    lt: int
    hash: bytes
    prev_lt: int
    prev_hash: bytes
    now: int
    total_fees: int
    aborted: bool
    compute_exit_code: int | None  # None when the compute phase was skipped
    compute_skipped: str | None  # the reason when skipped: "no_state", "bad_state", "no_gas", "suspended"
    in_msg: ParsedMessage | None
    out_msgs: tuple[ParsedMessage, ...]

    @property
    def success(self) -> bool:
        return not self.aborted


def snake_bytes(cell_slice: Slice) -> bytes | None:
    """The bytes of a snake string from `cell_slice` on (its data, then its first reference's...), or None
    when a cell holds a part byte or the chain is deeper than tonlib reads."""
    parts: list[bytes] = []
    current = cell_slice
    for _ in range(MAX_SNAKE_DEPTH + 1):
        if current.remaining_bits % 8:
            return None
        parts.append(current.load_bytes(current.remaining_bits // 8))
        if current.remaining_refs == 0:
            return b"".join(parts)
        current = current.load_ref().begin_parse()
    return None


def read_comment(body: Cell) -> bytes | None:
    """The text comment's bytes of a message body (op 0 and a snake string), else None."""
    cell_slice = body.begin_parse()
    if cell_slice.remaining_bits < 32 or cell_slice.load_uint(32) != TEXT_COMMENT_OP:
        return None
    return snake_bytes(cell_slice)


def parse_message(cell: Cell) -> ParsedMessage:
    """A message from its cell (its hash is the cell's: never of a re-serialization)."""
    message = MessageAny.deserialize(cell.begin_parse())
    info = message.info
    body: Cell = message.body if isinstance(message.body, Cell) else Cell.empty()
    head = body.begin_parse()
    op = head.load_uint(32) if head.remaining_bits >= 32 else None
    source: str | None = None
    destination: str | None = None
    value = fwd_fee = created_lt = 0
    bounce = bounced = False
    if isinstance(info, InternalMsgInfo):
        kind = "internal"
        source, destination = raw_address(info.src), raw_address(info.dest)
        value, fwd_fee, created_lt = info.value.grams, info.fwd_fee, info.created_lt
        bounce, bounced = bool(info.bounce), bool(info.bounced)
    elif isinstance(info, ExternalMsgInfo):
        kind = "external-in"
        destination = raw_address(info.dest)
    elif isinstance(info, ExternalOutMsgInfo):
        kind = "external-out"
        source, created_lt = raw_address(info.src), info.created_lt
    else:
        raise MessageParseError(f"unknown message info {type(info).__name__}")
    return ParsedMessage(
        kind=kind,
        source=source,
        destination=destination,
        value=value,
        bounce=bounce,
        bounced=bounced,
        fwd_fee=fwd_fee,
        created_lt=created_lt,
        hash=cell.hash,
        body_hash=body.hash,
        body=body,
        op=op,
        comment_bytes=read_comment(body),
        has_init=message.init is not None,
    )


def parse_message_boc(boc: bytes) -> ParsedMessage:
    try:
        return parse_message(Cell.one_from_boc(boc))
    except MessageParseError:
        raise
    except Exception as exc:  # pytoniq raises many kinds on malformed bytes
        raise MessageParseError(f"not a TON message: {type(exc).__name__}: {exc}") from None


def _message_cells(transaction: Cell) -> tuple[Cell | None, list[Cell]]:
    """The cells of a transaction's inbound message and of its outbound ones, in order."""
    messages = transaction.refs[0].begin_parse()
    in_cell = messages.load_ref() if messages.load_bit() else None
    found = messages.load_dict(15, value_deserializer=lambda value: value.load_ref())
    out_cells = [found[key] for key in sorted(found)] if found else []
    return in_cell, out_cells


def parse_transaction(boc: bytes, workchain: int = 0) -> ParsedTransaction:
    """A transaction from its BOC (a transaction has no workchain in its bytes: the caller knows it)."""
    try:
        cell = Cell.one_from_boc(boc)
        transaction = Transaction.deserialize(cell.begin_parse())
        in_cell, out_cells = _message_cells(cell)
        description = transaction.description
        aborted = bool(getattr(description, "aborted", False))
        compute = getattr(description, "compute_ph", None)
        exit_code: int | None = None
        skipped: str | None = None
        if compute is not None and getattr(compute, "type_", None) == "skipped":
            reason = getattr(compute, "reason", None)
            skipped = getattr(reason, "type_", "skipped")
        elif compute is not None:
            exit_code = int(compute.exit_code)
        return ParsedTransaction(
            account=f"{workchain}:{transaction.account_addr.hex()}",
            lt=transaction.lt,
            hash=cell.hash,
            prev_lt=transaction.prev_trans_lt,
            prev_hash=transaction.prev_trans_hash,
            now=transaction.now,
            total_fees=transaction.total_fees.grams,
            aborted=aborted,
            compute_exit_code=exit_code,
            compute_skipped=skipped,
            in_msg=parse_message(in_cell) if in_cell is not None else None,
            out_msgs=tuple(parse_message(out) for out in out_cells),
        )
    except MessageParseError:
        raise
    except Exception as exc:
        raise MessageParseError(f"not a TON transaction: {type(exc).__name__}: {exc}") from None
