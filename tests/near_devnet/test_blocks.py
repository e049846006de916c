"""Blocks, chunks, heights, finality and state queries of the NEAR devnet stub."""

from __future__ import annotations

from tests.near_devnet.fixtures import MakeNearDevnet, NearDevnet

NEAR = 10**24


def test_block_and_chunk_have_documented_keys(near_devnet: NearDevnet) -> None:
    near_devnet.produce(1)

    block = near_devnet.block("optimistic")
    chunk = near_devnet.rpc("chunk", {"chunk_id": block["chunks"][0]["chunk_hash"]})

    assert set(block) == {"author", "header", "chunks"}
    assert {
        "height",
        "prev_height",
        "hash",
        "prev_hash",
        "timestamp",
        "timestamp_nanosec",
        "gas_price",
        "last_final_block",
        "chunk_mask",
    } <= set(block["header"])
    assert [c["shard_id"] for c in block["chunks"]] == [0, 1]
    assert set(chunk) == {"author", "header", "transactions", "receipts"}
    assert {"chunk_hash", "shard_id", "height_created", "height_included", "prev_block_hash"} <= set(
        chunk["header"]
    )


def test_skipped_height_is_unknown_and_next_block_links_to_last(near_devnet: NearDevnet) -> None:
    before = near_devnet.block()["header"]

    near_devnet.skip(2)
    [height] = near_devnet.produce(1)

    assert height == before["height"] + 3
    block = near_devnet.block(block_id=height)["header"]
    assert block["prev_hash"] == before["hash"] and block["prev_height"] == before["height"]
    error = near_devnet.error("block", {"block_id": before["height"] + 1})
    assert error["name"] == "HANDLER_ERROR" and error["cause"]["name"] == "UNKNOWN_BLOCK"


def test_carried_over_chunk_repeats_the_old_header_and_delays_its_transactions(
    near_devnet: NearDevnet,
) -> None:
    [first] = near_devnet.produce(1)
    tx_hash = near_devnet.transfer("alice.near", NEAR)  # faucet.devnet signs: shard 0
    near_devnet.account("alice.near", NEAR)

    near_devnet.carry_over(0)
    [second] = near_devnet.produce(1)

    chunks = near_devnet.block(block_id=second)["chunks"]
    assert chunks[0]["height_included"] == first < second and chunks[0]["height_created"] == first
    assert chunks[1]["height_included"] == second
    assert near_devnet.block(block_id=second)["header"]["chunk_mask"] == [False, True]
    assert near_devnet.chunk(second, 0)["transactions"] == []
    [third] = near_devnet.produce(1)
    assert [tx["hash"] for tx in near_devnet.chunk(third, 0)["transactions"]] == [tx_hash]


def test_final_is_two_blocks_below_the_head(near_devnet: NearDevnet) -> None:
    heights = near_devnet.produce(3)

    assert near_devnet.block("optimistic")["header"]["height"] == heights[-1]
    assert near_devnet.block("final")["header"]["height"] == heights[-3]


def test_view_account_answers_at_the_asked_finality(near_devnet: NearDevnet) -> None:
    near_devnet.account("bob.devnet", 5 * NEAR)
    near_devnet.transfer("bob.devnet", NEAR)
    near_devnet.produce(2)  # included, then executed

    optimistic = near_devnet.rpc(
        "query", {"request_type": "view_account", "account_id": "bob.devnet", "finality": "optimistic"}
    )
    final = near_devnet.rpc(
        "query", {"request_type": "view_account", "account_id": "bob.devnet", "finality": "final"}
    )

    assert optimistic["amount"] == str(6 * NEAR) and final["amount"] == str(5 * NEAR)
    assert {"locked", "code_hash", "storage_usage", "storage_paid_at", "block_height", "block_hash"} <= set(
        final
    )
    missing = near_devnet.error(
        "query", {"request_type": "view_account", "account_id": "nobody.devnet", "finality": "final"}
    )
    assert missing["cause"]["name"] == "UNKNOWN_ACCOUNT"
    assert missing["cause"]["info"]["requested_account_id"] == "nobody.devnet"


def test_view_access_key_and_unknown_key(near_devnet: NearDevnet) -> None:
    created = near_devnet.account("carol.devnet", NEAR)

    key = near_devnet.rpc(
        "query",
        {
            "request_type": "view_access_key",
            "account_id": "carol.devnet",
            "public_key": created["public_key"],
            "finality": "optimistic",
        },
    )
    unknown = near_devnet.error(
        "query",
        {
            "request_type": "view_access_key",
            "account_id": "carol.devnet",
            "public_key": "ed25519:" + "1" * 32,
            "finality": "optimistic",
        },
    )

    assert key["nonce"] == 0 and key["permission"] == "FullAccess" and "block_hash" in key
    assert unknown["cause"]["name"] == "UNKNOWN_ACCESS_KEY"


def test_gas_price_status_and_unknown_method(near_devnet: NearDevnet) -> None:
    assert near_devnet.rpc("gas_price", {"block_id": None}) == {"gas_price": "100000000"}
    status = near_devnet.rpc("status", {})
    assert status["sync_info"]["syncing"] is False
    assert status["sync_info"]["latest_block_hash"] == near_devnet.block()["header"]["hash"]
    assert near_devnet.error("nope", {})["cause"]["name"] == "METHOD_NOT_FOUND"


def test_api_key_is_required_when_set(make_near_devnet: MakeNearDevnet) -> None:
    devnet = make_near_devnet(api_key="sesame")

    devnet.rpc("status", {})
    devnet.http.headers.pop("x-api-key")
    response = devnet.http.post(
        devnet.url + "/", json={"jsonrpc": "2.0", "id": "1", "method": "status", "params": {}}
    )

    assert response.status_code == 401
