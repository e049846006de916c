"""The JSON-RPC methods, with named params objects as nearcore takes them: block, chunk, query
(view_account, view_access_key), gas_price, status, send_tx, broadcast_tx_async, broadcast_tx_commit, tx,
EXPERIMENTAL_tx_status, EXPERIMENTAL_receipt, EXPERIMENTAL_light_client_proof.

Waiting: nearcore holds a `send_tx`/`tx` call up to ~10 s for `wait_until` and then answers TIMEOUT_ERROR;
the stub never blocks: it answers the level reached at once, or TIMEOUT_ERROR at once if that level is
below `wait_until` (default EXECUTED_OPTIMISTIC). Levels compare in nearcore's enum order NONE <
INCLUDED < EXECUTED_OPTIMISTIC < INCLUDED_FINAL < EXECUTED < FINAL, so INCLUDED_FINAL (receipts still
running) satisfies EXECUTED_OPTIMISTIC, as on nearcore."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from tests.near_devnet import views
from tests.near_devnet.borsh import BorshError, UnsupportedAction, b58decode, decode_signed_transaction
from tests.near_devnet.chain import Chain
from tests.near_devnet.errors import (
    handler,
    invalid_tx,
    parse_error,
    timeout,
    unknown_block,
    unknown_transaction,
)
from tests.near_devnet.model import GENESIS_HEIGHT, LEVELS, SHARDS, Block, Chunk, TxRecord

Method = Callable[[Chain, Any], Any]
METHODS: dict[str, Method] = {}


def method(name: str) -> Callable[[Method], Method]:
    def register(function: Method) -> Method:
        METHODS[name] = function
        return function

    return register


def _object(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise parse_error("Failed parsing args: the params are an object of named fields")
    return params


def _field(params: dict[str, Any], name: str, kind: type = str) -> Any:
    value = params.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise parse_error(f"Failed parsing args: missing field `{name}`")
    return value


def _block_at(chain: Chain, params: dict[str, Any], *, query: bool = False) -> Block:
    if "block_id" in params:
        reference = params["block_id"]
        found = chain.find_block(reference)
        if found is None:
            info = {"block_reference": {"block_id": reference}} if query else {}
            error = unknown_block(reference)
            error.info = info
            raise error
        return found
    finality = params.get("finality")
    if finality == "optimistic":
        return chain.head
    if finality == "near-final":
        return chain.blocks[max(0, len(chain.blocks) - 2)]
    if finality == "final":
        return chain.final
    if params.get("sync_checkpoint") in ("genesis", "earliest_available"):
        return chain.blocks[0]
    raise parse_error("Failed parsing args: `finality` (optimistic | near-final | final) or `block_id`")


@method("block")
def block(chain: Chain, params: Any) -> Any:
    return views.block(chain, _block_at(chain, _object(params)))


@method("chunk")
def chunk(chain: Chain, params: Any) -> Any:
    params = _object(params)
    if "chunk_id" in params:
        chunk_id = _field(params, "chunk_id")
        found: Chunk | None = next(
            (c for b in chain.blocks for c in b.chunks if c.chunk_hash == chunk_id), None
        )
        if found is None:
            raise handler("UNKNOWN_CHUNK", {"chunk_hash": chunk_id}, data=f"Chunk Missing: {chunk_id}")
        return views.chunk(found)
    shard_id = _field(params, "shard_id", int)
    at = _block_at(chain, params)
    if shard_id not in SHARDS:
        raise handler("INVALID_SHARD_ID", {"shard_id": shard_id}, data=f"Shard id {shard_id} does not exist")
    return views.chunk(at.chunks[shard_id])


@method("query")
def query(chain: Chain, params: Any) -> Any:
    params = _object(params)
    request_type = _field(params, "request_type")
    account_id = _field(params, "account_id")
    at = _block_at(chain, params, query=True)
    where = {"block_height": at.height, "block_hash": at.hash}
    account = at.state.get(account_id)
    if request_type not in ("view_account", "view_access_key"):
        raise parse_error(f"request_type {request_type!r} is not served by the NEAR devnet stub")
    if account is None:
        raise handler(
            "UNKNOWN_ACCOUNT",
            {"requested_account_id": account_id, **where},
            data=f"account {account_id} does not exist while viewing",
        )
    if request_type == "view_account":
        return {
            "amount": str(account.amount),
            "locked": "0",
            "code_hash": "11111111111111111111111111111111",
            "storage_usage": account.storage_usage,
            "storage_paid_at": 0,
            **where,
        }
    public_key = _field(params, "public_key")
    try:
        raw = b58decode(public_key.removeprefix("ed25519:"))
    except ValueError as exc:
        raise parse_error(f"Failed parsing args: public_key {public_key}: {exc}") from exc
    if raw not in account.keys:
        raise handler(
            "UNKNOWN_ACCESS_KEY",
            {"public_key": public_key, **where},
            data=f"access key {public_key} does not exist while viewing",
        )
    return {"nonce": account.keys[raw], "permission": "FullAccess", **where}


@method("gas_price")
def gas_price(chain: Chain, params: Any) -> Any:
    reference = params[0] if isinstance(params, list) and params else None
    if isinstance(params, dict):
        reference = params.get("block_id")
    if reference is not None and chain.find_block(reference) is None:
        raise unknown_block(reference)
    return {"gas_price": str(chain.gas_price)}


@method("EXPERIMENTAL_genesis_config")
def genesis_config(chain: Chain, params: Any) -> Any:
    """The genesis fields a client reads (nearcore answers the whole genesis config; these are its names)."""
    genesis = chain.blocks[0]
    return {
        "chain_id": "devnet",
        "genesis_height": GENESIS_HEIGHT,
        "genesis_time": views.iso_time(genesis.timestamp_ns),
        "protocol_version": views.PROTOCOL_VERSION,
        "min_gas_price": str(chain.gas_price),
        "transaction_validity_period": chain.validity,
        "epoch_length": 43200,
        "num_block_producer_seats": 1,
    }


@method("status")
def status(chain: Chain, params: Any) -> Any:
    head, genesis = chain.head, chain.blocks[0]
    return {
        "chain_id": "devnet",
        "genesis_hash": genesis.hash,
        "latest_protocol_version": views.PROTOCOL_VERSION,
        "protocol_version": views.PROTOCOL_VERSION,
        "node_public_key": "ed25519:" + "1" * 32,
        "rpc_addr": "127.0.0.1:3030",
        "sync_info": {
            "latest_block_hash": head.hash,
            "latest_block_height": head.height,
            "latest_state_root": views.ZERO_HASH,
            "latest_block_time": views.iso_time(head.timestamp_ns),
            "syncing": False,
            "earliest_block_hash": genesis.hash,
            "earliest_block_height": GENESIS_HEIGHT,
            "earliest_block_time": views.iso_time(genesis.timestamp_ns),
            "epoch_id": views.EPOCH_ID,
            "epoch_start_height": GENESIS_HEIGHT,
        },
        "validators": [{"account_id": views.AUTHOR}],
        "version": {"version": "near-devnet-stub", "build": "kassa-tests", "rustc_version": "none"},
        "uptime_sec": 0,
    }


def _wait_until(params: dict[str, Any]) -> str:
    wanted = params.get("wait_until", "EXECUTED_OPTIMISTIC")
    if wanted not in LEVELS:
        raise parse_error(f"Failed parsing args: wait_until {wanted!r} is not one of {', '.join(LEVELS)}")
    return str(wanted)


def _answer(chain: Chain, record: TxRecord, wanted: str, *, with_receipts: bool) -> Any:
    if LEVELS.index(chain.level(record)) < LEVELS.index(wanted):
        raise timeout()
    return views.tx_status(chain, record, with_receipts=with_receipts)


def _decode(encoded: Any) -> Any:
    if not isinstance(encoded, str):
        raise parse_error("Failed parsing args: missing field `signed_tx_base64`")
    try:
        return decode_signed_transaction(base64.b64decode(encoded, validate=True))
    except UnsupportedAction as exc:
        raise invalid_tx(
            {"ActionsValidation": {"UnsupportedByDevnet": {"action": exc.action, "message": str(exc)}}}
        ) from exc
    except (BorshError, binascii.Error) as exc:
        raise parse_error(f"Failed to decode transaction: {exc}") from exc


def submit(chain: Chain, encoded: Any) -> TxRecord:
    """Decode and accept a transaction sent by a client (who may not send FunctionCall to the stub)."""
    tx = _decode(encoded)
    calls = [a for a in tx.actions if a.kind == "FunctionCall"]
    if calls:
        message = "FunctionCall (tag 2) is not supported by the NEAR devnet stub"
        raise invalid_tx(
            {"ActionsValidation": {"UnsupportedByDevnet": {"action": "FunctionCall", "message": message}}}
        )
    return chain.accept(tx)


@method("send_tx")
def send_tx(chain: Chain, params: Any) -> Any:
    params = _object(params)
    wanted = _wait_until(params)
    record = submit(chain, params.get("signed_tx_base64"))
    return _answer(chain, record, wanted, with_receipts=False)


@method("broadcast_tx_async")
def broadcast_tx_async(chain: Chain, params: Any) -> Any:
    encoded = params[0] if isinstance(params, list) and params else _object(params).get("signed_tx_base64")
    return submit(chain, encoded).tx.hash_b58


@method("broadcast_tx_commit")
def broadcast_tx_commit(chain: Chain, params: Any) -> Any:
    encoded = params[0] if isinstance(params, list) and params else _object(params).get("signed_tx_base64")
    return _answer(chain, submit(chain, encoded), "EXECUTED_OPTIMISTIC", with_receipts=False)


def _status(chain: Chain, params: Any, *, with_receipts: bool) -> Any:
    params = _object(params)
    wanted = _wait_until(params)
    if "signed_tx_base64" in params:
        tx_hash = _decode(params["signed_tx_base64"]).hash_b58
        sender = None
    else:
        tx_hash, sender = _field(params, "tx_hash"), _field(params, "sender_account_id")
    record = chain.txs.get(tx_hash)
    if record is None or (sender is not None and record.tx.signer_id != sender):
        raise unknown_transaction(tx_hash)
    return _answer(chain, record, wanted, with_receipts=with_receipts)


@method("tx")
def tx(chain: Chain, params: Any) -> Any:
    return _status(chain, params, with_receipts=False)


@method("EXPERIMENTAL_tx_status")
def experimental_tx_status(chain: Chain, params: Any) -> Any:
    return _status(chain, params, with_receipts=True)


@method("EXPERIMENTAL_receipt")
def experimental_receipt(chain: Chain, params: Any) -> Any:
    receipt_id = _field(_object(params), "receipt_id")
    found = chain.receipts.get(receipt_id)
    if found is None or found.receipt_id not in chain.outcomes:
        raise handler(
            "UNKNOWN_RECEIPT", {"receipt_id": receipt_id}, data=f"Receipt {receipt_id} doesn't exist"
        )
    return views.receipt(found)


@method("EXPERIMENTAL_light_client_proof")
def light_client_proof(chain: Chain, params: Any) -> Any:
    """The outcome of a receipt or transaction with empty Merkle proofs; NOT_CONFIRMED while the block
    that executed it is above `light_client_head`."""
    params = _object(params)
    kind = _field(params, "type")
    if kind == "receipt":
        outcome_id, executor = _field(params, "receipt_id"), _field(params, "receiver_id")
        wanted = {"type": "receipt", "receipt_id": outcome_id, "receiver_id": executor}
    elif kind == "transaction":
        outcome_id, executor = _field(params, "transaction_hash"), _field(params, "sender_id")
        wanted = {"type": "transaction", "transaction_hash": outcome_id, "sender_id": executor}
    else:
        raise parse_error("Failed parsing args: type is `receipt` or `transaction`")
    head_hash = _field(params, "light_client_head")
    head = chain.by_hash.get(head_hash)
    if head is None:
        error = unknown_block(head_hash)
        error.info = {"block_reference": {"block_id": head_hash}}
        raise error
    outcome = chain.outcomes.get(outcome_id)
    if outcome is None or outcome.executor_id != executor:
        raise handler(
            "UNKNOWN_TRANSACTION_OR_RECEIPT",
            {"transaction_or_receipt_id": outcome_id},
            data=f"{wanted} has not been executed",
        )
    if outcome.block.height > head.height:
        raise handler(
            "NOT_CONFIRMED",
            {"transaction_or_receipt_id": outcome_id},
            data=f"{outcome_id} was executed above the light client head {head.height}",
        )
    return {
        "outcome_proof": views.outcome(outcome),
        "outcome_root_proof": [],
        "block_header_lite": views.header_lite(outcome.block),
        "block_proof": [],
    }
