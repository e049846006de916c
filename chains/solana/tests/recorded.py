"""Answers in the shapes an Agave node (2.x/3.x) writes them, field for field: what the client must read, and
what it must refuse when a field is off. Every answer is a whole JSON-RPC response body."""

from __future__ import annotations

import copy
from typing import Any

CUSTOMER = "4Wj1mkH9Cu6KVpwu32n34pAxxEiVqRUs68Y4KTmmZMaL"
MERCHANT = "HqHqFxi5PsyTZDTPNzQGFPzY7Hb3Hxr2FyCbX8yhSE8R"
REFERENCE = "CK8hiEB6JTxF4gRcwJfEteJvAfknd4ewNKgqULUUxqEJ"
TABLE = "DUc9uQdqowQdcxEFbUG5UfWqsbSyV7VxSrpBSPiAkmM"
PROGRAM = "Eutyt8ETuT9Zsjj8z6hxdwnzaoQadgMzANr25t3DyMk3"  # some program that pays by CPI
VAULT = "3ZNj4i7fgVPwaTPGGPfNQMRWjSrAtSw1FF9cW9YjUPqE"
OTHER = "GDMThB8VfQzCPxNBtivBXREsrUeKYoCqGCCjcqkVtNMf"
SYSTEM = "11111111111111111111111111111111"
COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111"
MEMO_V3 = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
SIG1 = "2soASZVz6NaEUZtRyCbf3hAdpPAAiecRovUSi99FFw9GJGQTbdoPFaFctNx1Nzt2FzPMLj5JjBnkXJm6CGofULNX"
SIG2 = "2RF3ugPdKMojzm2TzjYTL5x8zvFuUMQcJyK3utdX5Z7hRKmcKZjRR76nznazgtcFwr1r2os67PN1CXHF6eHNass7"
SIG3 = "3AQaVpvJWvsJAZSJpecnq7Qg2dPZdfGSehx315rYjEQNiYQUGguwj4ixeyUQphqA2ZiixQRuFKF8AsBKVF4cTcUR"
BLOCKHASH = "374Ls3Ur43R1wRm8H7JkjEJgvojp9Z6gqmFZkat336kf"
TRANSFER_250_000_000 = "3Bxs4NPCZMKNg6oy"  # SystemInstruction::Transfer { lamports: 250_000_000 }
TRANSFER_1_000_000 = "3Bxs4Bc3VYuGVB19"
MEMO_DATA = "gUeuHep6YW8xo4EWi6M"  # "kassa:inv_8XK2"
CONTEXT = {"apiVersion": "2.2.16", "slot": 341_279_842}


def response(result: Any, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "result": result, "id": request_id}


def error(code: int, message: str, data: Any = None, request_id: int | None = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "error": body, "id": request_id}


# A Solana Pay payment as a wallet sends it (v0, priority fee, memo then the transfer with its reference).
SOLANA_PAY_V0 = {
    "blockTime": 1_750_000_123,
    "meta": {
        "computeUnitsConsumed": 737,
        "costUnits": 2_279,
        "err": None,
        "fee": 5_050,
        "innerInstructions": [],
        "loadedAddresses": {"readonly": [], "writable": []},
        "logMessages": [
            f"Program {COMPUTE_BUDGET} invoke [1]",
            f"Program {COMPUTE_BUDGET} success",
            f"Program {COMPUTE_BUDGET} invoke [1]",
            f"Program {COMPUTE_BUDGET} success",
            f"Program {MEMO_V3} invoke [1]",
            'Program log: Memo (len 14): "kassa:inv_8XK2"',
            f"Program {MEMO_V3} consumed 287 of 700 compute units",
            f"Program {MEMO_V3} success",
            f"Program {SYSTEM} invoke [1]",
            f"Program {SYSTEM} success",
        ],
        "postBalances": [8_749_994_950, 250_000_000, 1, 1, 521_498_880, 0],
        "postTokenBalances": [],
        "preBalances": [9_000_000_000, 0, 1, 1, 521_498_880, 0],
        "preTokenBalances": [],
        "rewards": [],
        "status": {"Ok": None},
    },
    "slot": 341_279_800,
    "transaction": {
        "message": {
            "accountKeys": [CUSTOMER, MERCHANT, SYSTEM, COMPUTE_BUDGET, MEMO_V3, REFERENCE],
            "addressTableLookups": [],
            "header": {
                "numReadonlySignedAccounts": 0,
                "numReadonlyUnsignedAccounts": 4,
                "numRequiredSignatures": 1,
            },
            "instructions": [
                {"accounts": [], "data": "L22o7M", "programIdIndex": 3, "stackHeight": None},
                {"accounts": [], "data": "3Sy41WEwNLnT", "programIdIndex": 3, "stackHeight": None},
                {"accounts": [], "data": MEMO_DATA, "programIdIndex": 4, "stackHeight": None},
                {
                    "accounts": [0, 1, 5],
                    "data": TRANSFER_250_000_000,
                    "programIdIndex": 2,
                    "stackHeight": None,
                },
            ],
            "recentBlockhash": BLOCKHASH,
        },
        "signatures": [SIG1],
    },
    "version": 0,
}

# A payment made by a program (a smart wallet's vault) through CPI: no top-level transfer to the merchant;
# the merchant comes from an address lookup table (meta.loadedAddresses), after the static keys.
PROGRAM_PAYMENT = {
    "blockTime": 1_750_000_500,
    "meta": {
        "computeUnitsConsumed": 4_120,
        "err": None,
        "fee": 5_000,
        "innerInstructions": [
            {
                "index": 0,
                "instructions": [
                    {"accounts": [1, 3], "data": TRANSFER_1_000_000, "programIdIndex": 4, "stackHeight": 2}
                ],
            }
        ],
        "loadedAddresses": {"readonly": [SYSTEM], "writable": [MERCHANT]},
        "logMessages": [f"Program {PROGRAM} invoke [1]", f"Program {PROGRAM} success"],
        "postBalances": [1_999_995_000, 9_000_000, 1_141_440, 1_001_000_000, 1],
        "postTokenBalances": [],
        "preBalances": [2_000_000_000, 10_000_000, 1_141_440, 1_000_000_000, 1],
        "preTokenBalances": [],
        "rewards": [],
        "status": {"Ok": None},
    },
    "slot": 341_279_810,
    "transaction": {
        "message": {
            "accountKeys": [CUSTOMER, VAULT, PROGRAM],
            "addressTableLookups": [{"accountKey": TABLE, "readonlyIndexes": [0], "writableIndexes": [3]}],
            "header": {
                "numReadonlySignedAccounts": 0,
                "numReadonlyUnsignedAccounts": 1,
                "numRequiredSignatures": 1,
            },
            "instructions": [
                {
                    "accounts": [1, 3, 4],
                    "data": "12drXXUifTPGS3JjqhgHd",
                    "programIdIndex": 2,
                    "stackHeight": None,
                }
            ],
            "recentBlockhash": BLOCKHASH,
        },
        "signatures": [SIG2],
    },
    "version": 0,
}

# A legacy transfer that failed (more than the balance): its err, its fee paid, nothing moved.
FAILED_LEGACY = {
    "blockTime": 1_750_000_600,
    "meta": {
        "computeUnitsConsumed": 150,
        "err": {"InstructionError": [0, {"Custom": 1}]},
        "fee": 5_000,
        "innerInstructions": [],
        "loadedAddresses": {"readonly": [], "writable": []},
        "logMessages": [
            f"Program {SYSTEM} invoke [1]",
            "Transfer: insufficient lamports 994999000, need 5000000000",
            f"Program {SYSTEM} failed: custom program error: 0x1",
        ],
        "postBalances": [994_994_000, 0, 1],
        "postTokenBalances": [],
        "preBalances": [994_999_000, 0, 1],
        "preTokenBalances": [],
        "rewards": [],
        "status": {"Err": {"InstructionError": [0, {"Custom": 1}]}},
    },
    "slot": 341_279_820,
    "transaction": {
        "message": {
            "accountKeys": [OTHER, MERCHANT, SYSTEM],
            "header": {
                "numReadonlySignedAccounts": 0,
                "numReadonlyUnsignedAccounts": 1,
                "numRequiredSignatures": 1,
            },
            "instructions": [
                {"accounts": [0, 1], "data": "3Bxs411qCLLRMUsZ", "programIdIndex": 2, "stackHeight": None}
            ],
            "recentBlockhash": BLOCKHASH,
        },
        "signatures": [SIG3],
    },
    "version": "legacy",
}

SIGNATURES_FOR_ADDRESS = [
    {
        "blockTime": 1_750_000_600,
        "confirmationStatus": "finalized",
        "err": {"InstructionError": [0, {"Custom": 1}]},
        "memo": None,
        "signature": SIG3,
        "slot": 341_279_820,
    },
    {
        "blockTime": 1_750_000_123,
        "confirmationStatus": "finalized",
        "err": None,
        "memo": "[14] kassa:inv_8XK2",
        "signature": SIG1,
        "slot": 341_279_800,
    },
]

SIGNATURE_STATUSES = {
    "context": CONTEXT,
    "value": [
        {
            "confirmationStatus": "confirmed",
            "confirmations": 12,
            "err": None,
            "slot": 341_279_800,
            "status": {"Ok": None},
        },
        None,
        {
            "confirmationStatus": "finalized",
            "confirmations": None,
            "err": {"InstructionError": [0, {"Custom": 1}]},
            "slot": 341_279_820,
            "status": {"Err": {"InstructionError": [0, {"Custom": 1}]}},
        },
    ],
}

LATEST_BLOCKHASH = {
    "context": CONTEXT,
    "value": {"blockhash": BLOCKHASH, "lastValidBlockHeight": 319_563_027},
}

# sendTransaction's preflight failures as Agave 2.x writes them.
PREFLIGHT_DATA = {
    "accounts": None,
    "err": "BlockhashNotFound",
    "fee": None,
    "innerInstructions": None,
    "loadedAccountsDataSize": 0,
    "logs": [],
    "postBalances": None,
    "postTokenBalances": None,
    "preBalances": None,
    "preTokenBalances": None,
    "replacementBlockhash": None,
    "returnData": None,
    "unitsConsumed": 0,
}


def preflight(err: Any, message: str, logs: list[str] | None = None) -> dict[str, Any]:
    data = {**PREFLIGHT_DATA, "err": err, "logs": logs or []}
    return error(-32002, f"Transaction simulation failed: {message}", data)


def changed(answer: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `answer` with the field at `path` ("meta.fee", "transaction.signatures.0") set to
    `value`, or removed when `value` is ...(Ellipsis)."""
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
