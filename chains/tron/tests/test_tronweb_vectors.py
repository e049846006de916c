"""Kassa's TRON protobuf, txid and signatures against TronWeb's own (tests/tronweb, run offline): the same
bytes, the same txid, the same r and s, for the transactions Kassa builds; and TronWeb reads Kassa's bytes
back to the same bytes. So the encoder is not checked only by its own decoder."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
from bip_utils import Bip32Secp256k1, Bip39SeedGenerator

from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.tron import address, proto
from chains.tron.proto import (
    AccountCreateContract,
    Contract,
    DelegateResourceContract,
    RawData,
    Resource,
    TransferContract,
    TriggerSmartContract,
    UnDelegateResourceContract,
)
from chains.tron.transaction import Transaction, private_key_address, raw_data_json, trc20_transfer_data
from tests.tronweb_vectors import tronweb_answers

pytestmark = pytest.mark.tronweb

_SEED = Bip39SeedGenerator(DEVELOPMENT_MNEMONIC).Generate()
KEYS = [
    (1).to_bytes(32, "big"),
    Bip32Secp256k1.FromSeedAndPath(_SEED, "m/44'/195'/0'/0/0").PrivateKey().Raw().ToBytes(),
    bytes.fromhex(
        "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140"
    ),  # n - 1, the largest key
]
OWNER = private_key_address(KEYS[1])
HOT = private_key_address(KEYS[0])
USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
MAX_JS_SAFE = 2**53 - 1  # TronWeb writes int64 fields from JavaScript numbers: exact up to here
NOW = 1_764_374_400_000  # ms


@dataclass(frozen=True)
class Case:
    name: str
    raw: RawData
    key: bytes


def _raw(
    parameter: proto.ContractMessage, *, expires_in: int = 60_000, permission_id: int = 0, **raw: Any
) -> RawData:
    return RawData(
        ref_block_bytes=bytes.fromhex("f1c4"),
        ref_block_hash=bytes.fromhex("1122334455667788"),
        expiration=NOW + expires_in,
        timestamp=NOW,
        contracts=(Contract(parameter, permission_id),),
        **raw,
    )


CASES = [
    Case("trx", _raw(TransferContract(OWNER, HOT, 5_000_000)), KEYS[1]),
    Case("trx memo", _raw(TransferContract(OWNER, HOT, 1), data=b"INV-0001"), KEYS[1]),
    Case("trx largest", _raw(TransferContract(OWNER, HOT, MAX_JS_SAFE), expires_in=86_400_000), KEYS[0]),
    Case(
        "trx utf-8 memo",
        _raw(TransferContract(HOT, OWNER, 123_456_789), data="Rechnung №42 ✓".encode(), expires_in=1),
        KEYS[2],
    ),
    Case("trx permission", _raw(TransferContract(OWNER, HOT, 7), permission_id=2), KEYS[1]),
    Case(
        "trc20",
        _raw(
            TriggerSmartContract(OWNER, USDT, data=trc20_transfer_data(HOT, 25_000_000)), fee_limit=30_000_000
        ),
        KEYS[1],
    ),
    Case(
        "trc20 memo huge",
        _raw(
            TriggerSmartContract(OWNER, USDT, data=trc20_transfer_data(HOT, 2**256 - 1)),
            fee_limit=15_000_000_000,
            data=b"sweep 17",
            expires_in=3_600_000,
        ),
        KEYS[0],
    ),
    Case(
        "trigger with value",
        _raw(
            TriggerSmartContract(OWNER, USDT, data=bytes.fromhex("d0e30db0"), call_value=1_000_000),
            fee_limit=1,
        ),
        KEYS[2],
    ),
    Case("delegate energy", _raw(DelegateResourceContract(HOT, Resource.ENERGY, 10**12, OWNER)), KEYS[0]),
    Case(
        "delegate locked",
        _raw(
            DelegateResourceContract(HOT, Resource.ENERGY, 1, OWNER, lock=True, lock_period=28_800), data=b"d"
        ),
        KEYS[0],
    ),
    Case(
        "delegate bandwidth",
        _raw(DelegateResourceContract(HOT, Resource.BANDWIDTH, MAX_JS_SAFE, OWNER)),
        KEYS[0],
    ),
    Case("undelegate energy", _raw(UnDelegateResourceContract(HOT, Resource.ENERGY, 10**12, OWNER)), KEYS[0]),
    Case("activate", _raw(AccountCreateContract(HOT, OWNER), expires_in=30_000), KEYS[0]),
]


def _tronweb_json(raw: RawData) -> dict[str, Any]:
    body = raw_data_json(raw)
    value = body["contract"][0]["parameter"]["value"]
    if "resource" not in value and body["contract"][0]["type"].endswith("ResourceContract"):
        value["resource"] = "BANDWIDTH"  # TronWeb looks the name up; java-tron leaves the default out
    return {"raw_data": body, "visible": False}


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for case in CASES:
        cases.append(
            {"kind": "transaction", "transaction": _tronweb_json(case.raw), "private_key": case.key.hex()}
        )
        cases.append({"kind": "raw", "raw_data_hex": proto.encode_raw(case.raw).hex()})
    found = tronweb_answers(cases)
    return {case.name: {"built": found[2 * i], "read": found[2 * i + 1]} for i, case in enumerate(CASES)}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_kassa_writes_and_signs_what_tronweb_writes_and_signs(case: Case, answers: dict[str, Any]) -> None:
    tronweb = answers[case.name]["built"]

    ours = Transaction.build(case.raw).signed(case.key)

    assert ours.raw_bytes.hex() == tronweb["raw_data_hex"]
    assert ours.txid == tronweb["txID"]
    theirs = bytes.fromhex(tronweb["signature"])
    assert ours.signatures[0][:64] == theirs[:64]  # RFC 6979 and low s on both sides
    assert ours.signatures[0][64] + 27 == theirs[64]  # Kassa writes v as java-tron does, TronWeb adds 27
    node_json = {**tronweb, "raw_data": raw_data_json(case.raw), "signature": [tronweb["signature"]]}
    assert Transaction.from_json(node_json).signers() == [private_key_address(case.key)]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_kassa_reads_tronwebs_bytes_and_tronweb_reads_kassas(case: Case, answers: dict[str, Any]) -> None:
    tronweb = answers[case.name]

    assert proto.decode_raw(bytes.fromhex(tronweb["built"]["raw_data_hex"])) == case.raw
    assert tronweb["read"]["raw_data_hex"] == proto.encode_raw(case.raw).hex()
    assert tronweb["read"]["txID"] == Transaction.build(case.raw).txid


def test_addresses_are_tronwebs() -> None:
    rng = random.Random(195)
    accounts = [bytes(20), b"\xff" * 20, *(rng.randbytes(20) for _ in range(20))]
    keys = [*KEYS, *(rng.randbytes(32) for _ in range(10))]
    cases = [{"kind": "address", "hex": "41" + account.hex()} for account in accounts]
    cases += [{"kind": "key", "private_key": key.hex()} for key in keys]

    found = tronweb_answers(cases)

    for account, answer in zip(accounts, found, strict=False):
        assert answer == {"base58": address.from_evm(account), "hex": "41" + account.hex()}
    for key, answer in zip(keys, found[len(accounts) :], strict=True):
        assert answer == {"base58": private_key_address(key)}
