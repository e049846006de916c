"""Receipts, implicit accounts, DeleteAccount, the contract's and the failing transfers, system refunds,
transaction status levels and the light client proof."""

from __future__ import annotations

from typing import Any

from tests.near_devnet import wallet
from tests.near_devnet.fixtures import NearDevnet

NEAR = 10**24
STORAGE = 182 * 10**19
FAUCET = "faucet.devnet"


def _receipts_to(devnet: NearDevnet, receiver: str) -> list[tuple[int, dict[str, Any]]]:
    found = []
    head = devnet.block()["header"]["height"]
    for height in range(100, head + 1):
        if devnet.call("block", {"block_id": height}).get("result") is None:
            continue
        for shard in (0, 1):
            chunk = devnet.chunk(height, shard)
            if chunk["header"]["height_included"] == height:
                found += [(height, r) for r in chunk["receipts"] if r["receiver_id"] == receiver]
    return found


def test_transfer_to_implicit_account_creates_it_with_the_height_nonce(near_devnet: NearDevnet) -> None:
    _, public = wallet.keypair("customer")
    account_id = wallet.implicit_id(public)

    tx_hash = near_devnet.transfer(account_id, STORAGE)
    [included, executed] = near_devnet.produce(2)

    key = near_devnet.rpc(
        "query",
        {
            "request_type": "view_access_key",
            "account_id": account_id,
            "public_key": wallet.key_text(public),
            "finality": "optimistic",
        },
    )
    assert key["nonce"] == (executed - 1) * 1_000_000
    assert near_devnet.balance(account_id) == STORAGE
    status = near_devnet.tx_status(tx_hash, FAUCET)
    assert status["status"] == {"SuccessValue": ""}
    assert (
        status["transaction_outcome"]["block_hash"] == near_devnet.block(block_id=included)["header"]["hash"]
    )
    [(height, receipt)] = _receipts_to(near_devnet, account_id)
    assert height == executed and receipt["predecessor_id"] == FAUCET
    assert set(receipt["receipt"]["Action"]) >= {"signer_id", "signer_public_key", "gas_price", "actions"}


def test_transfer_below_storage_cost_fails_and_system_refunds(near_devnet: NearDevnet) -> None:
    _, public = wallet.keypair("too-poor")
    account_id = wallet.implicit_id(public)
    faucet_before = near_devnet.balance(FAUCET)

    tx_hash = near_devnet.transfer(account_id, STORAGE - 1)
    near_devnet.finalize()

    status = near_devnet.tx_status(tx_hash, FAUCET, "FINAL")
    assert status["final_execution_status"] == "FINAL"
    assert (
        status["status"]["Failure"]["ActionError"]["kind"]["LackBalanceForState"]["account_id"] == account_id
    )
    refund = status["receipts"][-1]
    assert refund["predecessor_id"] == "system" and refund["receiver_id"] == FAUCET
    assert refund["receipt"]["Action"]["actions"] == [{"Transfer": {"deposit": str(STORAGE - 1)}}]
    assert len(status["receipts_outcome"]) == 2
    assert near_devnet.balance(account_id) == 0
    fee = int(status["transaction_outcome"]["outcome"]["tokens_burnt"]) + int(
        status["receipts_outcome"][0]["outcome"]["tokens_burnt"]
    )
    assert near_devnet.balance(FAUCET) == faucet_before - fee


def test_delete_account_sends_the_balance_by_a_system_receipt(near_devnet: NearDevnet) -> None:
    private, public = wallet.keypair("leaving")
    account_id = wallet.implicit_id(public)
    near_devnet.account(account_id, 2 * NEAR, public_key=public.hex())
    near_devnet.account("heir.devnet", NEAR)
    head = near_devnet.block()["header"]["hash"]

    encoded, tx_hash = wallet.sign(
        private, account_id, 1, account_id, head, [wallet.delete_account("heir.devnet")]
    )
    near_devnet.rpc("send_tx", {"signed_tx_base64": encoded, "wait_until": "NONE"})
    near_devnet.finalize()

    status = near_devnet.tx_status(tx_hash, account_id, "FINAL")
    fee = int(status["transaction_outcome"]["outcome"]["tokens_burnt"]) + int(
        status["receipts_outcome"][0]["outcome"]["tokens_burnt"]
    )
    assert near_devnet.balance("heir.devnet") == NEAR + 2 * NEAR - fee
    refund = status["receipts"][-1]
    assert refund["predecessor_id"] == "system" and refund["receiver_id"] == "heir.devnet"
    assert (
        near_devnet.error(
            "query", {"request_type": "view_account", "account_id": account_id, "finality": "final"}
        )["cause"]["name"]
        == "UNKNOWN_ACCOUNT"
    )


def test_contract_transfer_lands_in_a_later_block_than_its_transaction(near_devnet: NearDevnet) -> None:
    near_devnet.account("shop.devnet", NEAR)

    sent = near_devnet.contract_transfer("shop.devnet", 3 * NEAR, delay=2)
    near_devnet.finalize()

    [(height, receipt)] = _receipts_to(near_devnet, "shop.devnet")
    assert receipt["receipt_id"] == sent["receipt_id"] and receipt["predecessor_id"] == "pay.devnet"
    status = near_devnet.tx_status(sent["tx_hash"], FAUCET, "FINAL")
    tx_block = near_devnet.block(block_id=status["transaction_outcome"]["block_hash"])
    assert height >= tx_block["header"]["height"] + 3
    assert near_devnet.balance("shop.devnet") == 4 * NEAR
    assert status["status"] == {"SuccessValue": ""}


def test_failing_transfer_is_a_failure_refunded_by_system(near_devnet: NearDevnet) -> None:
    near_devnet.account("shop.devnet", NEAR)

    sent = near_devnet.failing_transfer("shop.devnet", NEAR)
    near_devnet.finalize()

    status = near_devnet.tx_status(sent["tx_hash"], FAUCET, "FINAL")
    error = status["status"]["Failure"]["ActionError"]
    assert (
        error["index"] == 1 and "CodeDoesNotExist" in error["kind"]["FunctionCallError"]["CompilationError"]
    )
    assert near_devnet.balance("shop.devnet") == NEAR
    assert [r["predecessor_id"] for r in status["receipts"]] == [FAUCET, "system"]


def test_system_refund_credits_the_receiver(near_devnet: NearDevnet) -> None:
    near_devnet.account("shop.devnet", NEAR)

    receipt_id = near_devnet.system_refund("shop.devnet", NEAR)
    near_devnet.produce(1)

    [(_, receipt)] = _receipts_to(near_devnet, "shop.devnet")
    assert receipt["receipt_id"] == receipt_id and receipt["predecessor_id"] == "system"
    assert near_devnet.balance("shop.devnet") == 2 * NEAR


def test_status_levels_and_timeout(near_devnet: NearDevnet) -> None:
    near_devnet.account("shop.devnet", NEAR)
    tx_hash = near_devnet.transfer("shop.devnet", NEAR)
    params = {"tx_hash": tx_hash, "sender_account_id": FAUCET}

    assert near_devnet.rpc("tx", {**params, "wait_until": "NONE"}) == {"final_execution_status": "NONE"}
    answer = near_devnet.call("tx", {**params, "wait_until": "EXECUTED_OPTIMISTIC"})
    assert answer["error"]["cause"]["name"] == "TIMEOUT_ERROR"
    levels = []
    for _ in range(4):
        near_devnet.produce(1)
        levels.append(near_devnet.rpc("tx", {**params, "wait_until": "NONE"})["final_execution_status"])
    assert levels == ["INCLUDED", "EXECUTED_OPTIMISTIC", "EXECUTED", "FINAL"]
    status = near_devnet.rpc("tx", {**params, "wait_until": "FINAL"})
    assert {"status", "transaction", "transaction_outcome", "receipts_outcome"} <= set(status)
    unknown = near_devnet.error("tx", {"tx_hash": "1" * 32, "sender_account_id": FAUCET})
    assert unknown["cause"]["name"] == "UNKNOWN_TRANSACTION"


def test_light_client_proof_of_a_receipt(near_devnet: NearDevnet) -> None:
    near_devnet.account("shop.devnet", NEAR)
    sent = near_devnet.contract_transfer("shop.devnet", NEAR, delay=1)
    near_devnet.produce(2)
    params = {
        "type": "receipt",
        "receipt_id": sent["receipt_id"],
        "receiver_id": "shop.devnet",
        "light_client_head": near_devnet.block("final")["header"]["hash"],
    }

    assert (
        near_devnet.error("EXPERIMENTAL_light_client_proof", params)["cause"]["name"]
        == "UNKNOWN_TRANSACTION_OR_RECEIPT"
    )
    near_devnet.produce(1)
    assert near_devnet.error("EXPERIMENTAL_light_client_proof", params)["cause"]["name"] == "NOT_CONFIRMED"
    near_devnet.produce(2)
    proof = near_devnet.rpc(
        "EXPERIMENTAL_light_client_proof",
        {**params, "light_client_head": near_devnet.block("final")["header"]["hash"]},
    )

    assert set(proof) == {"outcome_proof", "outcome_root_proof", "block_header_lite", "block_proof"}
    assert proof["outcome_proof"]["id"] == sent["receipt_id"]
    assert proof["outcome_proof"]["outcome"]["status"] == {"SuccessValue": ""}
    assert proof["outcome_proof"]["outcome"]["executor_id"] == "shop.devnet"
    assert "inner_lite" in proof["block_header_lite"]
