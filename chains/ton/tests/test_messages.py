"""Transactions read from their bytes: what the sandbox's TVM wrote (comments, no comment, a bounce), and
bodies made by hand for the edges of a text comment."""

from __future__ import annotations

import os

import pytest
from pytoniq_core import Address, begin_cell

from chains.ton.messages import (
    MessageParseError,
    parse_message_boc,
    parse_transaction,
    read_comment,
)
from chains.ton.node import TonCenter
from chains.ton.wallet import comment_body
from tests.ton_devnet.fixtures import TonDevnet

TON = 1_000_000_000


def raw(address: str) -> str:
    parsed = Address(address)
    return f"{parsed.wc}:{parsed.hash_part.hex()}"


def test_a_payment_with_a_comment_read_from_the_bytes(ton_devnet: TonDevnet, toncenter: TonCenter) -> None:
    receiver = ton_devnet.customer()
    payer = ton_devnet.customer()
    ton_devnet.pay(payer, receiver, 2_000_000_003, comment="INV-0042")
    [transaction] = toncenter.transactions(receiver, limit=1)
    parsed = parse_transaction(transaction.data)
    assert parsed.account == raw(receiver) and parsed.success
    assert parsed.in_msg is not None
    assert parsed.in_msg.kind == "internal"
    assert parsed.in_msg.source == raw(payer)
    assert parsed.in_msg.value == 2_000_000_003
    assert parsed.in_msg.comment == "INV-0042" and parsed.in_msg.op == 0
    assert parsed.in_msg.bounce is True and parsed.in_msg.bounced is False  # EQ...: bounceable
    assert parsed.compute_exit_code == 0


def test_a_payment_without_a_comment(ton_devnet: TonDevnet, toncenter: TonCenter) -> None:
    receiver = ton_devnet.customer()
    ton_devnet.pay(ton_devnet.customer(), receiver, TON)
    [transaction] = toncenter.transactions(receiver, limit=1)
    assert transaction.in_msg is not None
    assert transaction.in_msg.comment is None and transaction.in_msg.parsed is not None
    assert transaction.in_msg.parsed.op is None and transaction.in_msg.value == TON


def test_a_bounce_is_flagged(ton_devnet: TonDevnet, toncenter: TonCenter) -> None:
    payer = ton_devnet.customer()
    nowhere = Address((0, os.urandom(32))).to_str(is_bounceable=True)
    ton_devnet.pay(payer, nowhere, TON, comment="INV-0043")

    [failed] = toncenter.transactions(nowhere, limit=1)
    assert failed.aborted and failed.parsed.compute_skipped == "no_state"
    [back] = failed.out_msgs
    [bounce] = toncenter.transactions(payer, limit=1)
    assert bounce.in_msg is not None and bounce.in_msg.bounced
    assert bounce.in_msg.parsed is not None and bounce.in_msg.parsed.op == 0xFFFFFFFF
    assert bounce.in_msg.comment is None  # a bounce is never a payment's comment
    assert bounce.in_msg.source == raw(nowhere) and bounce.in_msg.value == back.value < TON


def test_comment_edges() -> None:
    assert read_comment(comment_body("")) == b""
    assert read_comment(comment_body("é" * 200)) == ("é" * 200).encode()
    not_utf8 = begin_cell().store_uint(0, 32).store_bytes(b"\xff\xfe").end_cell()
    assert read_comment(not_utf8) == b"\xff\xfe"
    part_byte = begin_cell().store_uint(0, 32).store_uint(1, 4).end_cell()
    assert read_comment(part_byte) is None
    other_op = begin_cell().store_uint(0x0F8A7EA5, 32).store_bytes(b"jetton").end_cell()
    assert read_comment(other_op) is None
    assert read_comment(begin_cell().store_uint(0, 16).end_cell()) is None
    deep = begin_cell().store_bytes(b"z").end_cell()
    for _ in range(20):
        deep = begin_cell().store_bytes(b"z").store_ref(deep).end_cell()
    too_deep = begin_cell().store_uint(0, 32).store_ref(deep).end_cell()
    assert read_comment(too_deep) is None


@pytest.mark.parametrize("junk", [b"", b"not a boc", bytes.fromhex("b5ee9c72410101010002000000")])
def test_junk_is_not_a_transaction(junk: bytes) -> None:
    with pytest.raises(MessageParseError):
        parse_transaction(junk)
    with pytest.raises(MessageParseError):
        parse_message_boc(junk)
