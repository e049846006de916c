"""Commitment over HTTP: a transaction is processed in the working bank, confirmed once its slot is produced,
finalized 31 slots behind the head; each method answers at the bank of the commitment asked, finalized by
default, and the history methods refuse `processed` as Agave does."""

from __future__ import annotations

from solders.keypair import Keypair

from tests.solana_devnet import wallet
from tests.solana_devnet.agave import parsed
from tests.solana_devnet.fixtures import DevnetClient
from tests.solana_devnet.node import FINALITY_DEPTH

SOL = 1_000_000_000


def test_a_payment_moves_from_processed_to_confirmed_to_finalized(solana_devnet: DevnetClient) -> None:
    merchant = Keypair().pubkey()
    signature = solana_devnet.payment(merchant, SOL)
    slot = solana_devnet.info["genesis_slot"] + 1

    processed = solana_devnet.call("getSignatureStatuses", [signature])
    parsed(processed, "GetSignatureStatusesResp")
    assert processed["result"]["value"] == [
        {
            "slot": slot,
            "confirmations": 0,
            "status": {"Ok": None},
            "err": None,
            "confirmationStatus": "processed",
        }
    ]
    assert solana_devnet.transaction(signature) is None  # getTransaction sees no processed transaction
    assert solana_devnet.rpc("getSignaturesForAddress", str(merchant), {"commitment": "confirmed"}) == []

    solana_devnet.mine()
    confirmed = solana_devnet.status(signature)
    assert (confirmed["confirmationStatus"], confirmed["confirmations"], confirmed["slot"]) == (
        "confirmed",
        1,
        slot,
    )
    assert solana_devnet.transaction(signature)["slot"] == slot
    assert solana_devnet.transaction(signature, "finalized") is None
    assert solana_devnet.rpc("getSignaturesForAddress", str(merchant)) == []  # finalized by default

    solana_devnet.mine(FINALITY_DEPTH - 1)
    assert solana_devnet.status(signature)["confirmations"] == FINALITY_DEPTH
    assert solana_devnet.status(signature)["confirmationStatus"] == "confirmed"

    solana_devnet.mine()
    finalized = solana_devnet.status(signature)
    assert (finalized["confirmationStatus"], finalized["confirmations"]) == ("finalized", None)
    assert solana_devnet.transaction(signature, "finalized")["slot"] == slot
    (found,) = solana_devnet.rpc("getSignaturesForAddress", str(merchant))
    assert (found["signature"], found["confirmationStatus"]) == (signature, "finalized")


def test_slots_and_heights_by_commitment(solana_devnet: DevnetClient) -> None:
    genesis, height = solana_devnet.info["genesis_slot"], solana_devnet.info["genesis_height"]

    mined = solana_devnet.mine(40)

    head = genesis + 40
    assert mined["slot"] == head and mined["height"] == height + 40 and mined["finalized"] == head - 31
    assert solana_devnet.rpc("getSlot", {"commitment": "processed"}) == head + 1  # the working bank
    assert solana_devnet.rpc("getSlot", {"commitment": "confirmed"}) == head
    assert solana_devnet.rpc("getSlot") == head - FINALITY_DEPTH  # finalized by default
    assert solana_devnet.rpc("getBlockHeight", {"commitment": "confirmed"}) == height + 40
    assert solana_devnet.rpc("getBlockHeight") == height + 40 - FINALITY_DEPTH
    parsed(solana_devnet.call("getSlot"), "GetSlotResp")
    parsed(solana_devnet.call("getBlockHeight"), "GetBlockHeightResp")


def test_a_balance_is_the_one_of_the_bank_asked(solana_devnet: DevnetClient) -> None:
    merchant = Keypair().pubkey()
    solana_devnet.payment(merchant, 3 * SOL)

    def balances() -> list[int]:
        return [solana_devnet.balance(merchant, c) for c in ("processed", "confirmed", "finalized")]

    assert balances() == [3 * SOL, 0, 0]
    solana_devnet.mine()
    assert balances() == [3 * SOL, 3 * SOL, 0]
    solana_devnet.payment(merchant, SOL)
    assert balances() == [4 * SOL, 3 * SOL, 0]
    solana_devnet.mine(FINALITY_DEPTH)
    assert balances() == [4 * SOL, 4 * SOL, 3 * SOL]
    solana_devnet.mine()
    assert balances() == [4 * SOL, 4 * SOL, 4 * SOL]
    answer = solana_devnet.call("getBalance", str(merchant))
    parsed(answer, "GetBalanceResp")
    assert answer["result"]["context"] == {
        "apiVersion": answer["result"]["context"]["apiVersion"],
        "slot": solana_devnet.rpc("getSlot"),
    }


def test_the_history_methods_refuse_processed(solana_devnet: DevnetClient) -> None:
    signature = solana_devnet.payment(Keypair().pubkey(), SOL)

    for method, first in (
        ("getTransaction", signature),
        ("getSignaturesForAddress", str(Keypair().pubkey())),
    ):
        error = solana_devnet.rpc_error(method, first, {"commitment": "processed"})
        assert error == {"code": -32602, "message": "Method does not support commitment below `confirmed`"}


def test_min_context_slot_not_reached(solana_devnet: DevnetClient) -> None:
    head = solana_devnet.mine()["slot"]

    error = solana_devnet.rpc_error(
        "getBalance", str(Keypair().pubkey()), {"commitment": "confirmed", "minContextSlot": head + 5}
    )

    assert error == {
        "code": -32016,
        "message": "Minimum context slot has not been reached",
        "data": {"contextSlot": head},
    }


def test_the_latest_blockhash_of_each_bank(solana_devnet: DevnetClient) -> None:
    solana_devnet.mine(40)
    height = solana_devnet.info["genesis_height"] + 40

    confirmed = solana_devnet.call("getLatestBlockhash", {"commitment": "confirmed"})
    finalized = solana_devnet.rpc("getLatestBlockhash")

    parsed(confirmed, "GetLatestBlockhashResp")
    assert confirmed["result"]["value"]["lastValidBlockHeight"] == height + 150
    assert finalized["value"]["lastValidBlockHeight"] == height - FINALITY_DEPTH + 150
    assert finalized["value"]["blockhash"] != confirmed["result"]["value"]["blockhash"]
    assert solana_devnet.mine(0 + 1)["blockhash"] != confirmed["result"]["value"]["blockhash"]


def test_a_program_account_has_its_balance_in_every_bank(solana_devnet: DevnetClient) -> None:
    memo = str(wallet.MEMO_V3)
    before = solana_devnet.balance(memo, "finalized")

    solana_devnet.payment(Keypair().pubkey(), SOL, memo="x")
    solana_devnet.mine()

    assert before > 0
    assert [solana_devnet.balance(memo, c) for c in ("processed", "confirmed", "finalized")] == [before] * 3
