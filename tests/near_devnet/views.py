"""The JSON shapes of nearcore's RPC answers (docs.near.org/api/rpc), built from the chain's records.
Roots, signatures and epoch ids are placeholders (base58 of zeros or derived hashes); heights, hashes,
chunk headers, transactions, receipts and outcomes are the chain's own."""

from __future__ import annotations

import datetime
from typing import Any

from tests.near_devnet.borsh import b58encode, key_text
from tests.near_devnet.chain import Chain
from tests.near_devnet.model import Block, Chunk, Outcome, Receipt, TxRecord, derive

ZERO_HASH = "11111111111111111111111111111111"
EPOCH_ID = ZERO_HASH
PROTOCOL_VERSION = 73
AUTHOR = "validator.devnet"
NO_SIGNATURE = "ed25519:" + b58encode(bytes(64))


def _root(*parts: Any) -> str:
    return b58encode(derive(b"root", *[str(part) for part in parts]))


def iso_time(timestamp_ns: int) -> str:
    moment = datetime.datetime.fromtimestamp(timestamp_ns / 1e9, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + f"{timestamp_ns % 1000:03d}Z"


def chunk_header(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_hash": chunk.chunk_hash,
        "prev_block_hash": chunk.prev_block_hash,
        "outcome_root": _root("outcome", chunk.chunk_hash),
        "prev_state_root": _root("state", chunk.chunk_hash),
        "encoded_merkle_root": _root("encoded", chunk.chunk_hash),
        "encoded_length": 8,
        "height_created": chunk.height_created,
        "height_included": chunk.height_included,
        "shard_id": chunk.shard_id,
        "gas_used": chunk.gas_used,
        "gas_limit": 1_000_000_000_000_000,
        "rent_paid": "0",
        "validator_reward": "0",
        "balance_burnt": str(chunk.balance_burnt),
        "outgoing_receipts_root": _root("receipts", chunk.chunk_hash),
        "tx_root": _root("txs", chunk.chunk_hash),
        "validator_proposals": [],
        "congestion_info": {
            "delayed_receipts_gas": "0",
            "buffered_receipts_gas": "0",
            "receipt_bytes": 0,
            "allowed_shard": chunk.shard_id,
        },
        "bandwidth_requests": None,
        "signature": NO_SIGNATURE,
    }


def block(chain: Chain, block: Block) -> dict[str, Any]:
    new = [chunk.height_included == block.height for chunk in block.chunks]
    final = chain.blocks[max(0, block.ordinal - 1 - 2)]
    ds_final = chain.blocks[max(0, block.ordinal - 2)]
    header = {
        "height": block.height,
        "prev_height": block.prev_height,
        "epoch_id": EPOCH_ID,
        "next_epoch_id": EPOCH_ID,
        "hash": block.hash,
        "prev_hash": block.prev_hash,
        "prev_state_root": _root("state", block.hash),
        "block_body_hash": _root("body", block.hash),
        "chunk_receipts_root": _root("receipts", block.hash),
        "chunk_headers_root": _root("headers", block.hash),
        "chunk_tx_root": _root("txs", block.hash),
        "outcome_root": _root("outcome", block.hash),
        "chunks_included": sum(new),
        "challenges_root": ZERO_HASH,
        "timestamp": block.timestamp_ns,
        "timestamp_nanosec": str(block.timestamp_ns),
        "random_value": _root("random", block.hash),
        "validator_proposals": [],
        "chunk_mask": new,
        "gas_price": str(chain.gas_price),
        "block_ordinal": block.ordinal,
        "rent_paid": "0",
        "validator_reward": "0",
        "total_supply": str(sum(account.amount for account in block.state.values())),
        "challenges_result": [],
        "last_final_block": final.hash if block.ordinal > 2 else ZERO_HASH,
        "last_ds_final_block": ds_final.hash if block.ordinal > 1 else ZERO_HASH,
        "next_bp_hash": _root("bp"),
        "block_merkle_root": _root("merkle", block.hash),
        "epoch_sync_data_hash": None,
        "approvals": [NO_SIGNATURE],
        "signature": NO_SIGNATURE,
        "latest_protocol_version": PROTOCOL_VERSION,
    }
    return {"author": AUTHOR, "header": header, "chunks": [chunk_header(chunk) for chunk in block.chunks]}


def receipt(receipt: Receipt) -> dict[str, Any]:
    action = {
        "signer_id": receipt.signer_id,
        "signer_public_key": key_text(receipt.signer_public_key),
        "gas_price": str(receipt.gas_price),
        "output_data_receivers": [],
        "input_data_ids": [],
        "actions": [action.to_json() for action in receipt.actions],
        "is_promise_yield": False,
    }
    return {
        "predecessor_id": receipt.predecessor_id,
        "receiver_id": receipt.receiver_id,
        "receipt_id": receipt.receipt_id,
        "receipt": {"Action": action},
        "priority": 0,
    }


def chunk(chunk: Chunk) -> dict[str, Any]:
    return {
        "author": AUTHOR,
        "header": chunk_header(chunk),
        "transactions": [tx.to_json() for tx in chunk.transactions],
        "receipts": [receipt(item) for item in chunk.receipts],
    }


def outcome(outcome: Outcome) -> dict[str, Any]:
    return {
        "proof": [],
        "block_hash": outcome.block.hash,
        "id": outcome.id,
        "outcome": {
            "logs": [],
            "receipt_ids": list(outcome.receipt_ids),
            "gas_burnt": outcome.gas_burnt,
            "tokens_burnt": str(outcome.tokens_burnt),
            "executor_id": outcome.executor_id,
            "status": outcome.status,
            "metadata": {"version": 1, "gas_profile": None},
        },
    }


def tx_status(chain: Chain, record: TxRecord, *, with_receipts: bool) -> dict[str, Any]:
    level = chain.level(record)
    if level == "NONE":
        return {"final_execution_status": "NONE"}
    executed = [chain.outcomes[r] for r in record.receipt_ids if r in chain.outcomes]
    answer: dict[str, Any] = {
        "final_execution_status": level,
        "status": chain.status(record),
        "transaction": record.tx.to_json(),
        "transaction_outcome": outcome(chain.outcomes[record.tx.hash_b58]),
        "receipts_outcome": [outcome(item) for item in executed],
    }
    if with_receipts:
        answer["receipts"] = [receipt(chain.receipts[r]) for r in record.receipt_ids]
    return answer


def header_lite(block: Block) -> dict[str, Any]:
    return {
        "prev_block_hash": block.prev_hash,
        "inner_rest_hash": _root("inner_rest", block.hash),
        "inner_lite": {
            "height": block.height,
            "epoch_id": EPOCH_ID,
            "next_epoch_id": EPOCH_ID,
            "prev_state_root": _root("state", block.hash),
            "outcome_root": _root("outcome", block.hash),
            "timestamp": block.timestamp_ns,
            "timestamp_nanosec": str(block.timestamp_ns),
            "next_bp_hash": _root("bp"),
            "block_merkle_root": _root("merkle", block.hash),
        },
    }
