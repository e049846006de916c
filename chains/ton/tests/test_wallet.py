"""Kassa's wallet v4R2 external messages: byte for byte @ton/ton's own (the devnet's `v4-transfer` control
builds them with WalletContractV4.createTransfer), and taken by the real wallet contract on the devnet: TON
moves once, a replay and a late message are refused."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
from pytoniq_core import Address, Cell

from chains.ton.messages import parse_message_boc
from chains.ton.node import ExternalMessageRejected, TonCenter
from chains.ton.wallet import (
    DEFAULT_WALLET_ID,
    WALLET_V4R2_CODE,
    Transfer,
    comment_body,
    external_transfer,
    public_key_of,
    wallet_v4r2_address,
)
from tests.ton_devnet.fixtures import TonDevnet

TON = 1_000_000_000
SEED = bytes.fromhex("5e" * 32)


def some_address(*, bounceable: bool, seed: bytes | None = None) -> str:
    return Address((0, seed or os.urandom(32))).to_str(is_bounceable=bounceable)


def raw(address: str) -> str:
    parsed = Address(address)
    return f"{parsed.wc}:{parsed.hash_part.hex()}"


def test_the_code_is_wallet_v4r2() -> None:
    assert base64.b64encode(WALLET_V4R2_CODE.hash).decode() == "/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA="


def test_comments_are_snake_strings() -> None:
    short = comment_body("INV-1").begin_parse()
    assert short.load_uint(32) == 0 and short.load_bytes(5) == b"INV-1" and not short.refs
    exact = comment_body("a" * 123)
    assert len(exact.bits) == 32 + 123 * 8 and not exact.refs
    spills = comment_body("a" * 124)
    assert len(spills.bits) == 32 + 123 * 8 and len(spills.refs) == 1 and len(spills.refs[0].bits) == 8


CASES: list[dict[str, Any]] = [
    {"seqno": 0, "amount": 1, "comment": None, "bounceable": False},
    {"seqno": 0, "amount": 10 * TON, "comment": "INV-0001", "bounceable": False, "with_init": True},
    {"seqno": 17, "amount": 123_456_789, "comment": "Rechnung №42 ✓", "bounceable": True},
    {"seqno": 2**32 - 1, "amount": 2**120 - 1, "comment": "x" * 123, "bounceable": True},
    {"seqno": 3, "amount": 5, "comment": "y" * 124, "bounceable": False, "bounce": True},
    {"seqno": 4, "amount": 5, "comment": "🙂" * 300, "bounceable": True, "bounce": False, "send_mode": 1},
    {"seqno": 5, "amount": 0, "comment": "", "bounceable": True, "wallet_id": 42, "send_mode": 128},
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"seqno={case['seqno']}")
def test_the_bytes_are_ton_tons(ton_devnet: TonDevnet, case: dict[str, Any]) -> None:
    to = some_address(bounceable=case["bounceable"], seed=bytes([case["seqno"] % 256]) * 32)
    valid_until = 1_800_000_000 + case["seqno"] % 1000
    wallet_id = case.get("wallet_id", DEFAULT_WALLET_ID)
    transfer = Transfer(to, case["amount"], case["comment"], case.get("bounce"), case.get("send_mode", 3))
    mine = external_transfer(
        SEED,
        transfer,
        seqno=case["seqno"],
        valid_until=valid_until,
        wallet_id=wallet_id,
        with_state_init=case.get("with_init", False),
    )
    fields: dict[str, Any] = {
        "seed": SEED.hex(),
        "seqno": case["seqno"],
        "valid_until": valid_until,
        "to": to,
        "amount": str(case["amount"]),
        "wallet_id": wallet_id,
        "send_mode": transfer.send_mode,
        "with_init": case.get("with_init", False),
    }
    if case["comment"] is not None:
        fields["comment"] = case["comment"]
    if case.get("bounce") is not None:
        fields["bounce"] = case["bounce"]
    theirs = ton_devnet.v4_transfer(**fields)
    assert mine.boc == base64.b64decode(theirs["boc"])
    assert mine.hash == Cell.one_from_boc(base64.b64decode(theirs["boc"])).hash
    assert raw(theirs["address"]) == mine.wallet
    assert public_key_of(SEED).hex() == theirs["public_key"]
    parsed = parse_message_boc(mine.boc)
    assert parsed.kind == "external-in" and parsed.destination == mine.wallet
    assert parsed.has_init is case.get("with_init", False)


def house(ton_devnet: TonDevnet, seed: bytes, *, balance: int = 10 * TON, deploy: bool = True) -> str:
    made = ton_devnet.house_wallet(public_key_of(seed), balance=balance, deploy=deploy)
    derived = wallet_v4r2_address(public_key_of(seed))
    assert raw(made["address"]) == f"{derived.wc}:{derived.hash_part.hex()}"
    return made["address"]  # type: ignore[no-any-return]


def test_the_devnets_wallet_takes_kassas_message_once(ton_devnet: TonDevnet, toncenter: TonCenter) -> None:
    seed = os.urandom(32)
    address = house(ton_devnet, seed)
    payee = some_address(bounceable=False)
    assert toncenter.seqno(address) == 0
    message = external_transfer(
        seed, Transfer(payee, 321_000_000, "payout #9"), seqno=0, valid_until=ton_devnet.now() + 60
    )
    sent = toncenter.send_boc(message.boc)
    assert (sent.hash, sent.hash_norm) == (message.hash, message.hash_norm)
    assert toncenter.seqno(address) == 1
    assert toncenter.address_information(payee).balance == 321_000_000

    [transaction] = toncenter.transactions(address, limit=1)
    assert transaction.in_msg is not None and transaction.in_msg.hash == message.hash
    [out] = transaction.out_msgs
    assert out.destination == raw(payee) and out.value == 321_000_000 and out.comment == "payout #9"
    assert out.parsed is not None and out.parsed.bounce is False  # UQ...: non-bounceable

    with pytest.raises(ExternalMessageRejected) as replay:
        toncenter.send_boc(message.boc)
    assert replay.value.code == 500 and "exitcode=33" in replay.value.error
    assert toncenter.seqno(address) == 1
    assert toncenter.address_information(payee).balance == 321_000_000


def test_a_late_message_is_refused(ton_devnet: TonDevnet, toncenter: TonCenter) -> None:
    seed = os.urandom(32)
    address = house(ton_devnet, seed)
    message = external_transfer(
        seed, Transfer(some_address(bounceable=False), TON), seqno=0, valid_until=ton_devnet.now() + 10
    )
    ton_devnet.advance(11)
    with pytest.raises(ExternalMessageRejected) as late:
        toncenter.send_boc(message.boc)
    assert "exitcode=36" in late.value.error
    assert toncenter.seqno(address) == 0


def test_the_first_message_can_deploy_the_wallet(ton_devnet: TonDevnet, toncenter: TonCenter) -> None:
    seed = os.urandom(32)
    address = house(ton_devnet, seed, balance=3 * TON, deploy=False)
    assert toncenter.address_information(address).state == "uninitialized"
    assert toncenter.seqno(address) == 0
    payee = some_address(bounceable=True)
    message = external_transfer(
        seed,
        Transfer(payee, TON, bounce=False),
        seqno=0,
        valid_until=ton_devnet.now() + 60,
        with_state_init=True,
    )
    toncenter.send_boc(message.boc)
    assert toncenter.address_information(address).state == "active"
    assert toncenter.seqno(address) == 1
    assert toncenter.address_information(payee).balance == TON  # not bounced though EQ: bounce=False


def test_the_fee_of_a_transfer_is_estimated(ton_devnet: TonDevnet, toncenter: TonCenter) -> None:
    seed = os.urandom(32)
    address = house(ton_devnet, seed)
    message = external_transfer(
        seed, Transfer(some_address(bounceable=False), TON, "x"), seqno=0, valid_until=ton_devnet.now() + 60
    )
    body = parse_message_boc(message.boc).body
    fees = toncenter.estimate_fee(address, body.to_boc())
    assert fees.gas_fee > 0 and fees.fwd_fee > 0 and 0 < fees.total < TON // 10
    assert toncenter.seqno(address) == 0


def test_wrong_arguments_are_refused() -> None:
    transfer = Transfer(some_address(bounceable=True), 1)
    with pytest.raises(ValueError):
        external_transfer(b"short", transfer, seqno=0, valid_until=1)
    with pytest.raises(ValueError):
        external_transfer(SEED, transfer, seqno=-1, valid_until=1)
    with pytest.raises(ValueError):
        external_transfer(SEED, transfer, seqno=0, valid_until=2**32)
    with pytest.raises(ValueError):
        external_transfer(SEED, transfer, seqno=1, valid_until=1, with_state_init=True)
    with pytest.raises(ValueError):
        external_transfer(SEED, Transfer(transfer.destination, -1), seqno=0, valid_until=1)
    with pytest.raises(ValueError):
        external_transfer(SEED, Transfer(transfer.destination, 1, send_mode=256), seqno=0, valid_until=1)
