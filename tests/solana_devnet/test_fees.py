"""Fees: getFeeForMessage is what the SVM charges (5,000 lamports a signature and the priority fee, the
compute-unit limit defaulting as the runtime does), null for an expired blockhash; getRecentPrioritizationFees
gives each recent slot's least compute-unit price, raised to the named writable accounts'."""

from __future__ import annotations

import base64

import pytest
from solders.keypair import Keypair
from solders.message import to_bytes_versioned

from tests.solana_devnet import wallet
from tests.solana_devnet.agave import parsed
from tests.solana_devnet.fixtures import DevnetClient
from tests.solana_devnet.node import MAX_PROCESSING_AGE

SOL = wallet.LAMPORTS_PER_SOL


@pytest.mark.parametrize(
    ("options", "fee"),
    [
        ({}, 5_000),
        ({"compute_unit_limit": 10_000, "compute_unit_price": 250_000}, 5_000 + 2_500),
        ({"compute_unit_limit": 1_001, "compute_unit_price": 1}, 5_000 + 1),  # rounded up
        (
            {"compute_unit_price": 1_000_000},
            5_000 + 6_000,
        ),  # default limit: 3,000 units per builtin instruction
        (
            {"compute_unit_price": 1_000_000, "memo": "x"},
            5_000 + 206_000,
        ),  # ...and 200,000 for the memo program
    ],
)
def test_the_fee_for_a_message_is_what_the_transaction_pays(
    solana_devnet: DevnetClient, options: dict[str, object], fee: int
) -> None:
    transaction = wallet.payment(
        solana_devnet.customer, Keypair().pubkey(), SOL, solana_devnet.blockhash(), **options
    )
    message = base64.b64encode(to_bytes_versioned(transaction.message)).decode()

    answer = solana_devnet.call("getFeeForMessage", message, {"commitment": "confirmed"})
    signature = solana_devnet.send(transaction)
    solana_devnet.mine()

    parsed(answer, "GetFeeForMessageResp")
    assert answer["result"]["value"] == fee
    assert solana_devnet.transaction(signature)["meta"]["fee"] == fee


def test_no_fee_for_an_expired_blockhash(solana_devnet: DevnetClient) -> None:
    transaction = wallet.payment(solana_devnet.customer, Keypair().pubkey(), SOL, solana_devnet.blockhash())
    message = base64.b64encode(to_bytes_versioned(transaction.message)).decode()
    solana_devnet.mine(MAX_PROCESSING_AGE + 1)

    answer = solana_devnet.rpc("getFeeForMessage", message, {"commitment": "processed"})

    assert answer["value"] is None


def test_recent_prioritization_fees(solana_devnet: DevnetClient) -> None:
    busy, quiet = Keypair().pubkey(), Keypair().pubkey()
    payer = Keypair()
    solana_devnet.airdrop(payer.pubkey(), 10 * SOL)
    solana_devnet.mine()
    solana_devnet.payment(busy, SOL, compute_unit_limit=1_000, compute_unit_price=7_000)
    solana_devnet.payment(busy, SOL, payer=payer, compute_unit_limit=1_000, compute_unit_price=9_000)
    solana_devnet.payment(
        quiet, SOL, payer=payer, compute_unit_limit=1_000, compute_unit_price=0, blockhash=None
    )
    slot = solana_devnet.mine()["slot"]

    plain = solana_devnet.call("getRecentPrioritizationFees")
    named = solana_devnet.rpc("getRecentPrioritizationFees", [str(busy)])

    parsed(plain, "GetRecentPrioritizationFeesResp")
    by_slot = {item["slot"]: item["prioritizationFee"] for item in plain["result"]}
    assert by_slot[slot] == 0  # the slot's least price
    assert {item["slot"]: item["prioritizationFee"] for item in named}[slot] == 7_000  # busy's least
    assert [item["slot"] for item in plain["result"]] == sorted(by_slot)
    assert max(by_slot) == slot and len(by_slot) <= 150
    too_many = solana_devnet.rpc_error("getRecentPrioritizationFees", [str(busy)] * 129)
    assert too_many == {"code": -32602, "message": "Too many inputs provided; max 128"}
