"""Answers in the shapes nearcore's JSON-RPC writes them, field for field: what the NEAR client must read, and
what it must refuse when a field is off. Every answer is a whole JSON-RPC response body; the source of each
is named beside it (docs.near.org pages are near/docs `docs/api/rpc/*.md`; nearcore paths are near/nearcore).
Where an example was long (a block's 6 chunks, 20 approvals), only some entries are kept, each whole."""

from __future__ import annotations

import copy
from typing import Any

BLOCK_HASH = "6RWmTYhXCzjMjoY3Mz1rfFcnBm8E6XeDDbFEPUA4sv1w"
PREV_HASH = "Wj6B3RTv73EWDNbSammRDeA9315RaPyRrJYmiP4nG4X"
HEIGHT = 187_310_138
CHUNK_HASH = "CzPafxtJmM1FnRoasKWAVhceJzZzkz9RKUBQQ4kY9V1v"
OLD_CHUNK_HASH = "44MZBWmPgXszAyojsffzozvNEdRsJcsq7RrdAV4Y7CLm"
TX_HASH = "7AfonAhbK4ZbdBU9VPcQdrTZVZBXE25HmZAMEABs9To1"
SENDER = "rpc-examples.testnet"
CONTRACT = "contract.rpc-examples.testnet"
RECEIPT_MIXED = "23r1wWsMAVtZysr9wNV6TCSdZTUyPbhBZ3McJ6zStpaE"  # CreateAccount, Transfer, AddKey
RECEIPT_REFUND = "AZz7tN4cSK9Ngeq7KUFWSm8yi9WLsVjqYiohNYzW8Pc4"  # from `system`
DEPOSIT = "3a4af7942619bbae2123e8712d90208c2276017243309494c2a52b9a268148ab"  # an implicit account
PAYER = "6488e3d824c6eb210b97f7f5c49d2e5f0ff63b289f2b2f861af31fa09421163d"
RECEIPT_PAYMENT = "5TySsQ8u1BsTVVkGgKDGvt1Xvecwndo8BsJZmcfJHob4"
PAYER_KEY = "ed25519:7mSqVJpb8ziMDB7yDAEajeANyDosh1WK5ksS6mCdDHRE"
PUBLIC_KEY = "ed25519:vJBU18AtvePANmepMoY3rtV3wt1RHwqoktak82E4d2M"


def response(result: Any, request_id: Any = "dontcare") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "result": result, "id": request_id}


def error(
    name: str, cause: str | None, info: Any = None, data: Any = None, message: str = "Server error"
) -> dict[str, Any]:
    """nearcore's RpcError (chain/jsonrpc-primitives/src/errors.rs): `name` the kind (HANDLER_ERROR,
    REQUEST_VALIDATION_ERROR, INTERNAL_ERROR), `cause` {"name", "info"}, and the legacy code/message/data."""
    body: dict[str, Any] = {"name": name, "code": -32000, "message": message}
    if cause is not None:
        body["cause"] = {"name": cause} if info is None else {"name": cause, "info": info}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "error": body, "id": "dontcare"}


def changed(answer: Any, path: str, value: Any) -> Any:
    """A deep copy of `answer` with the field at `path` ("header.height", "chunks.0.shard_id") set to `value`,
    or removed when `value` is ...(Ellipsis)."""
    copied = copy.deepcopy(answer)
    *parents, last = path.split(".")
    node: Any = copied
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key: Any = int(last) if isinstance(node, list) else last
    if value is Ellipsis:
        del node[key]
    else:
        node[key] = value
    return copied


def _chunk_header(chunk_hash: str, shard_id: int, included: int, prev_state_root: str) -> dict[str, Any]:
    # docs/api/rpc/block-chunk.md, "Block details" example response: a ChunkHeaderView (core/primitives
    # src/views.rs) as protocol 73 writes it.
    return {
        "balance_burnt": "0",
        "bandwidth_requests": None,
        "chunk_hash": chunk_hash,
        "congestion_info": {
            "allowed_shard": shard_id + 1,
            "buffered_receipts_gas": "0",
            "delayed_receipts_gas": "0",
            "receipt_bytes": 0,
        },
        "encoded_length": 308,
        "encoded_merkle_root": "6z9JwwtVfS5nRKcKeJxgzThRRs2wCNvbH88T3cuARe6W",
        "gas_limit": 1_000_000_000_000_000,
        "gas_used": 0,
        "height_created": included,
        "height_included": included,
        "outcome_root": "11111111111111111111111111111111",
        "outgoing_receipts_root": "AChfy3dXeJjgD2w5zXkUTFb6w8kg3AYGnyyjsvc7hXLv",
        "prev_block_hash": PREV_HASH,
        "prev_state_root": prev_state_root,
        "rent_paid": "0",
        "shard_id": shard_id,
        "signature": (
            "ed25519:L1iCopW8gY5rqwfuZT8Y3bHHXvuvWT87X9rwdY6LmFi8LGZdMhj2CkQCXLGrzdfYXD8B54wPTM9TqJAHcKfFDyW"
        ),
        "tx_root": "CMwUsP8q4DTBUYxXm12jVwC8xTD8L1T1n3jdKLQVh6bm",
        "validator_proposals": [],
        "validator_reward": "0",
    }


# docs/api/rpc/block-chunk.md, "Block details" (block_id 187310138): shard 0's chunk new in this block; shard
# 1's carried over from the block before (height_included below the height: its shard produced none).
BLOCK: dict[str, Any] = {
    "author": "node2",
    "chunks": [
        _chunk_header(CHUNK_HASH, 0, HEIGHT, "cRMk2zd2bWC1oBfGowgMTpqW9L5SNG2FeE72yT1wpQA"),
        _chunk_header(OLD_CHUNK_HASH, 1, HEIGHT - 1, "EQ5mcUAzJA4du33f9g9YzKvdte2ukyRHMMHbbqdazZvU"),
    ],
    "header": {
        "approvals": [
            None,
            "ed25519:5GhoQTPXsWpgGPq2ZHZCfP9iY9GSmHMNsnydzxBxnibGvC43PFUAD58aUSNyfepRY4dAMbjbf8CduMyQU83HBxAt",
        ],
        "block_body_hash": "6oSbpNUWcAUuaKWx79qTwyRPDLukg9hZ1RCa2PS5rcGt",
        "block_merkle_root": "DWK6gpunDXHgxU1KJi3Dx8o2HcKqQmUQJEaisK4M3ovD",
        "block_ordinal": 139_413_603,
        "challenges_result": [],
        "challenges_root": "11111111111111111111111111111111",
        "chunk_endorsements": [[255, 255], [251, 127]],
        "chunk_headers_root": "4MjChqi5JChDhaiU4zkhN1jeygZiMd66KeHe3Gz9Vs7s",
        "chunk_mask": [True, False],
        "chunk_receipts_root": "7nEtD9XsDbRJy7MwvUg4QX5zDUktiEVRP9nM6hHpsHmX",
        "chunk_tx_root": "44YKYmcG1JTocmPSMGpriLwN8CTi29sD8z5FcocMZAKo",
        "chunks_included": 1,
        "epoch_id": "HkFsp3sn9K3KDWVoWPCfUSQocgf5bH4icgjHijePc2aX",
        "epoch_sync_data_hash": None,
        "gas_price": "100000000",
        "hash": BLOCK_HASH,
        "height": HEIGHT,
        "last_ds_final_block": PREV_HASH,
        "last_final_block": "71qgTQCVFfjQkimSdnhxR8iWSP6o9jqumLcZ9k5g25mT",
        "latest_protocol_version": 73,
        "next_bp_hash": "AWcwcDPWUjcW9zGiAt7UEUZzZ5Ue77537turbvBLbsiB",
        "next_epoch_id": "FQBXgdi9oWKanYBXPP1sNUD93KMquocjT5mVrjQ4PH7E",
        "outcome_root": "7Qkowo41AoiMdNfyiT83DwvwyReMeqhrkpqTzGm4Z19T",
        "prev_hash": PREV_HASH,
        "prev_height": HEIGHT - 1,
        "prev_state_root": "AiApSbMNq9kPPEiLLWhFpSrX5HoPToaBXztM9fePX2ap",
        "random_value": "Br6a6tgEhNBZm9iPtxCLhwqwCr2eoEAGGMeVYZnU6fVF",
        "rent_paid": "0",
        "signature": (
            "ed25519:YSuWifP5B3VBPuEVJppWt13AShXsWZ64Qus8uHmtddE2mY6u4jnZVv6Gz4tFvWXfBAkZDk5xtd95rUterEdQm5t"
        ),
        "timestamp": 1_739_254_177_539_033_760,
        "timestamp_nanosec": "1739254177539033760",
        "total_supply": "2515615267787707740507051994761921",
        "validator_proposals": [],
        "validator_reward": "0",
    },
}


def _action_receipt(
    predecessor: str,
    receiver: str,
    receipt_id: str,
    actions: list[Any],
    signer: str,
    key: str,
    gas_price: str,
) -> dict[str, Any]:
    # docs/api/rpc/transactions.md, EXPERIMENTAL_tx_status example's `receipts` (a ReceiptView).
    return {
        "predecessor_id": predecessor,
        "priority": 0,
        "receipt": {
            "Action": {
                "actions": actions,
                "gas_price": gas_price,
                "input_data_ids": [],
                "is_promise_yield": False,
                "output_data_receivers": [],
                "signer_id": signer,
                "signer_public_key": key,
            }
        },
        "receipt_id": receipt_id,
        "receiver_id": receiver,
    }


ADD_KEY = {"AddKey": {"access_key": {"nonce": 0, "permission": "FullAccess"}, "public_key": PUBLIC_KEY}}
MIXED_RECEIPT = _action_receipt(
    SENDER,
    CONTRACT,
    RECEIPT_MIXED,
    ["CreateAccount", {"Transfer": {"deposit": "5000000000000000000000000"}}, ADD_KEY],
    SENDER,
    PUBLIC_KEY,
    "103000000",
)
REFUND_RECEIPT = _action_receipt(
    "system",
    SENDER,
    RECEIPT_REFUND,
    [{"Transfer": {"deposit": "12524843062500000000"}}],
    SENDER,
    PUBLIC_KEY,
    "0",
)
# An implicit account paying another (a testnet tx_status's receipts, as the docs' deposits page shows them).
PAYMENT_RECEIPT = _action_receipt(
    PAYER,
    DEPOSIT,
    RECEIPT_PAYMENT,
    [{"Transfer": {"deposit": "100000000000000000000000"}}],
    PAYER,
    PAYER_KEY,
    "103000000",
)
# A data receipt (core/primitives/src/views.rs ReceiptEnumView::Data): a promise's result, no money.
DATA_RECEIPT = {
    "predecessor_id": CONTRACT,
    "priority": 0,
    "receipt": {
        "Data": {
            "data": "",
            "data_id": "8dqeDxNDPyGVZYdG7mWoBmyYEdR6JGnM1XgLDbhvQMKx",
            "is_promise_resume": False,
        }
    },
    "receipt_id": "CAWY1ePnxB571f5sUMHQDFBGuXvtDbGKzxUD3wHCecS1",
    "receiver_id": SENDER,
}

# docs/api/rpc/block-chunk.md, "Chunk details" (chunk_id CzPafx...): its header and transaction as given; the
# example's `receipts` is empty, so four ReceiptViews of the shapes above are listed in it.
CHUNK = {
    "author": "kiln.pool.f863973.m0",
    "header": _chunk_header(CHUNK_HASH, 0, HEIGHT, "cRMk2zd2bWC1oBfGowgMTpqW9L5SNG2FeE72yT1wpQA"),
    "receipts": [PAYMENT_RECEIPT, MIXED_RECEIPT, DATA_RECEIPT, REFUND_RECEIPT],
    "transactions": [
        {
            "actions": [
                {
                    "FunctionCall": {
                        "args": "eyJyZWNvcmRfaWQiOjEsInJlY29yZCI6IkhlbGxvLCBOZWFyIFByb3RvY29sISJ9",
                        "deposit": "0",
                        "gas": 50_000_000_000_000,
                        "method_name": "write_record",
                    }
                }
            ],
            "hash": "J3KbUXF9YPu2eGnbDCACxGvmMDZMdP7acGYhVLHGu9y2",
            "nonce": 187_309_654_000_001,
            "priority_fee": 0,
            "public_key": "ed25519:EddTahJwZpJjYPPmat7DBm1m2vdrFBzVv7e3T4hzkENd",
            "receiver_id": CONTRACT,
            "signature": (
                "ed25519:3opUQgg5eNQmE2LJ8zJiitBAVLDFR3svk8LC5VtVGo"
                "rQuq8jWLocKAt7B4xb6n7DhH8zSVCWcRRrmVL9f1wHiVXa"
            ),
            "signer_id": "account.rpc-examples.testnet",
        }
    ],
}


def outcome(
    outcome_id: str, block_hash: str, executor: str, status: Any, burnt: str, gas: int
) -> dict[str, Any]:
    """An ExecutionOutcomeWithIdView (docs/api/rpc/transactions.md, receipts_outcome[])."""
    return {
        "block_hash": block_hash,
        "id": outcome_id,
        "outcome": {
            "executor_id": executor,
            "gas_burnt": gas,
            "logs": [],
            "metadata": {"gas_profile": [], "version": 3},
            "receipt_ids": [],
            "status": status,
            "tokens_burnt": burnt,
        },
        "proof": [{"direction": "Left", "hash": "CuLK7PnND8x1XooFysdUbG9VqG2yzKKjPSFXSGsuKzn4"}],
    }


# docs/api/rpc/transactions.md, "Transaction Status with Receipts" example response, whole.
TX_STATUS: dict[str, Any] = {
    "final_execution_status": "FINAL",
    "receipts": [MIXED_RECEIPT, REFUND_RECEIPT],
    "receipts_outcome": [
        outcome(
            RECEIPT_MIXED,
            "ApNYvBCU3Nnn8TeESvJ7Anfw8vfbmwcXmavypAWtKv6p",
            CONTRACT,
            {"SuccessValue": ""},
            "417494768750000000000",
            4_174_947_687_500,
        ),
        outcome(
            RECEIPT_REFUND,
            "4C1384HReTY7NR7jVk2aMDyccCNVM5zeQDQ6z84cj1N4",
            SENDER,
            {"SuccessValue": ""},
            "0",
            223_182_562_500,
        ),
    ],
    "status": {"SuccessValue": ""},
    "transaction": {
        "actions": ["CreateAccount", {"Transfer": {"deposit": "5000000000000000000000000"}}, ADD_KEY],
        "hash": TX_HASH,
        "nonce": 187_307_146_000_001,
        "priority_fee": 0,
        "public_key": PUBLIC_KEY,
        "receiver_id": CONTRACT,
        "signature": (
            "ed25519:34NgQAukvyKajXFDB6XzKpfd2YDUo3QyTdkUeCgwm24J3dkju7Ejm71VRkRsJwdpKwH1HQWqSV2frnF26yQYEZpJ"
        ),
        "signer_id": SENDER,
    },
    "transaction_outcome": {
        **outcome(
            TX_HASH,
            "G1xSnhtrDiaEZNef41kiY8ePQCAwsF2gyVcRNa7B6xaP",
            SENDER,
            {"SuccessReceiptId": RECEIPT_MIXED},
            "417494768750000000000",
            4_174_947_687_500,
        ),
    },
}
TX_STATUS["transaction_outcome"]["outcome"]["metadata"] = {"gas_profile": None, "version": 1}
TX_STATUS["transaction_outcome"]["outcome"]["receipt_ids"] = [RECEIPT_MIXED]
# What "NONE" answers for a transaction received but not yet included (chain/jsonrpc-primitives/src/types/
# transactions.rs: the outcome is flattened from an Option, so only the level is left).
TX_RECEIVED = {"final_execution_status": "NONE"}
# An ActionError as a failed receipt's outcome carries it (core/primitives/src/errors.rs, ActionErrorKind).
FAILURE = {
    "Failure": {"ActionError": {"index": 1, "kind": {"AccountDoesNotExist": {"account_id": CONTRACT}}}}
}

# EXPERIMENTAL_light_client_proof (chain/jsonrpc-primitives/src/types/light_client.rs, RpcLightClient
# ExecutionProofResponse); values from a testnet proof as light-client verifiers record it; the outcome is
# PAYMENT_RECEIPT's, executed by the deposit account.
LIGHT_CLIENT_PROOF = {
    "block_header_lite": {
        "inner_lite": {
            "block_merkle_root": "583vb6csYnczHyt5z6Msm4LzzGkceTZHdvXjC8vcWeGK",
            "epoch_id": "4tBzDozzGED3QiCRURfViVuyJy5ikaN9dVH7m2MYkTyw",
            "height": 134_481_525,
            "next_bp_hash": "8LCFsP6LeueT4X3PEni9CMvH7maDYpBtfApWZdXmagss",
            "next_epoch_id": "9gYJSiT3TQbKbwui5bdbzBA9PCMSSfiffWhBdMtcasm2",
            "outcome_root": "8Eu5qpDUMpW5nbmTrTKmDH2VYqFEHTKPETSTpPoyGoGc",
            "prev_state_root": "EwkRecSP8GRvaxL7ynCEoHhsL1ksU6FsHVLCevcccF5q",
            "timestamp": 1_691_615_068_679_535_000,
            "timestamp_nanosec": "1691615068679535094",
        },
        "inner_rest_hash": "G25j8jSWRyrXV317cPC3qYA4SyJWXsBfErjhBYQkxw5A",
        "prev_block_hash": "AEnTyGRrk2roQkYSWoqYhzkbp5SWWJtCd71ZYyj1P26i",
    },
    "block_proof": [{"direction": "Left", "hash": "AEnTyGRrk2roQkYSWoqYhzkbp5SWWJtCd71ZYyj1P26i"}],
    "outcome_proof": outcome(
        RECEIPT_PAYMENT, BLOCK_HASH, DEPOSIT, {"SuccessValue": ""}, "0", 223_182_562_500
    ),
    "outcome_root_proof": [{"direction": "Right", "hash": "9f7YjLvzvSspJMMJ3DDTrFaEyPQ5qFqQDNoWzAbSTjTy"}],
}

# docs/api/rpc/contracts.md, "View account" example response (an AccountView).
VIEW_ACCOUNT = {
    "amount": "399992611103597728750000000",
    "block_hash": "9MjpcnwW3TSdzGweNfPbkx8M74q1XzUcT1PAN8G5bNDz",
    "block_height": 17_795_474,
    "code_hash": "11111111111111111111111111111111",
    "locked": "0",
    "storage_paid_at": 0,
    "storage_usage": 642,
}
# docs/api/rpc/access-keys.md, "View access key" (an AccessKeyView with the block it was read at).
VIEW_ACCESS_KEY = {
    "block_hash": "J1zkrK8sHuzzV8pkXsEPrZH8SStUJPJSF5YNnTnMK7Gq",
    "block_height": 187_316_844,
    "nonce": 187_309_654_000_001,
    "permission": "FullAccess",
}
FUNCTION_CALL_PERMISSION = {
    "FunctionCall": {"allowance": "249923095562500000000000", "method_names": [], "receiver_id": CONTRACT}
}
# chain/jsonrpc/src/lib.rs process_query_response: an unknown access key is answered as a RESULT, for
# backward compatibility (the old docs: "returns 'access key ... does not exist while viewing'").
ACCESS_KEY_UNKNOWN = {
    "block_hash": "J1zkrK8sHuzzV8pkXsEPrZH8SStUJPJSF5YNnTnMK7Gq",
    "block_height": 187_316_844,
    "error": f"access key {PUBLIC_KEY} does not exist while viewing",
    "logs": [],
}
# docs/api/rpc/gas.md example response; docs/api/rpc/protocol.md genesis config (the field Kassa reads and
# a few beside it).
GAS_PRICE = {"gas_price": "100000000"}
GENESIS_CONFIG = {
    "chain_id": "testnet",
    "epoch_length": 43_200,
    "genesis_height": 42_376_888,
    "max_gas_price": "10000000000000000000000",
    "min_gas_price": "5000",
    "protocol_version": 29,
    "transaction_validity_period": 86_400,
}

# Errors (docs/api/rpc/errors.md; infos as nearcore's RpcXxxError enums serialize them, tag "name" and
# content "info"; data the legacy string or, for INVALID_TRANSACTION, ServerError::TxExecutionError).
UNKNOWN_BLOCK = error(
    "HANDLER_ERROR", "UNKNOWN_BLOCK", {}, "DB Not Found Error: BLOCK HEIGHT: 187310139 \n Cause: Unknown"
)
UNKNOWN_CHUNK = error(
    "HANDLER_ERROR", "UNKNOWN_CHUNK", {"chunk_hash": CHUNK_HASH}, f"Chunk Missing: {CHUNK_HASH}"
)
UNKNOWN_ACCOUNT = error(
    "HANDLER_ERROR",
    "UNKNOWN_ACCOUNT",
    {"block_hash": BLOCK_HASH, "block_height": HEIGHT, "requested_account_id": DEPOSIT},
    f"account {DEPOSIT} does not exist while viewing",
)
UNKNOWN_ACCESS_KEY = error(
    "HANDLER_ERROR",
    "UNKNOWN_ACCESS_KEY",
    {"block_hash": BLOCK_HASH, "block_height": HEIGHT, "public_key": PUBLIC_KEY},
)
UNKNOWN_TRANSACTION = error(
    "HANDLER_ERROR",
    "UNKNOWN_TRANSACTION",
    {"requested_transaction_hash": TX_HASH},
    f"Transaction {TX_HASH} doesn't exist",
)
UNKNOWN_TRANSACTION_OR_RECEIPT = error(
    "HANDLER_ERROR", "UNKNOWN_TRANSACTION_OR_RECEIPT", {"transaction_or_receipt_id": RECEIPT_PAYMENT}
)
NOT_CONFIRMED = error("HANDLER_ERROR", "NOT_CONFIRMED", {"transaction_or_receipt_id": RECEIPT_PAYMENT})
TIMEOUT = error("HANDLER_ERROR", "TIMEOUT_ERROR", None, "Timeout")
INTERNAL = error(
    "INTERNAL_ERROR", "INTERNAL_ERROR", {"error_message": "Node is overloaded"}, "Node is overloaded"
)
PARSE = error(
    "REQUEST_VALIDATION_ERROR",
    "PARSE_ERROR",
    {"error_message": "missing field `tx_hash`"},
    "missing field `tx_hash`",
    message="Parse error",
)


def invalid_transaction(invalid_tx: Any, *, in_info: bool = False) -> dict[str, Any]:
    """INVALID_TRANSACTION as nearcore writes it (types/transactions.rs): the InvalidTxError skipped in
    cause.info ({}) and given in `data`; `in_info` puts it in cause.info too, as other versions have."""
    detail = {"TxExecutionError": {"InvalidTxError": invalid_tx}}
    return error("HANDLER_ERROR", "INVALID_TRANSACTION", detail if in_info else {}, detail)


INVALID_NONCE = {"InvalidNonce": {"ak_nonce": 187_309_654_000_002, "tx_nonce": 187_309_654_000_001}}
NOT_ENOUGH_BALANCE = {
    "NotEnoughBalance": {"balance": "1000", "cost": "2000000000000000000000", "signer_id": DEPOSIT}
}
EXPIRED = "Expired"
