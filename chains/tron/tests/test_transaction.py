from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chains.tron import address, proto
from chains.tron.proto import Contract, ProtoError, RawData, TransferContract, TriggerSmartContract
from chains.tron.tests.strategies import raw_datas
from chains.tron.transaction import (
    TRANSFER_TOPIC,
    Transaction,
    TransactionMismatch,
    decode_trc20_transfer,
    parse_transfer_log,
    private_key_address,
    raw_data_json,
    recover_signer,
    sign,
    single,
    tapos,
    trc20_transfer_data,
    txid,
)
from chains.tron.units import from_units, to_units

KEY = (1).to_bytes(32, "big")
OWNER = "TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC"  # private key 1's
TO = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"
USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"  # USDT's TRC-20 contract on mainnet
USDT_EVM = "a614f803b6fd780986a42c78ec9c7f77e6ded13c"
REF = (b"\xab\xcd", bytes(range(8)))


def _transfer(amount: int = 5_000_000, memo: bytes = b"") -> RawData:
    return single(
        TransferContract(OWNER, TO, amount),
        ref_block=REF,
        expiration=1_700_000_060_000,
        timestamp=1_700_000_000_000,
        data=memo,
    )


def test_the_txid_is_the_sha256_of_the_raw_bytes() -> None:
    transaction = Transaction.build(_transfer())

    assert (
        transaction.txid
        == hashlib.sha256(proto.encode_raw(_transfer())).hexdigest()
        == txid(transaction.raw_bytes)
    )


def test_java_trons_documented_broadcast_example_has_its_txid_and_signer() -> None:
    # The example body of wallet/broadcasttransaction in java-tron's HTTP API documentation (a
    # transaction of 2018; its signature's v is 01, the recovery id).
    raw = RawData(
        ref_block_bytes=bytes.fromhex("267e"),
        ref_block_hash=bytes.fromhex("9a447d222e8de9f2"),
        expiration=1530893064000,
        timestamp=1530893006233,
        contracts=(
            Contract(
                TransferContract(
                    "41e552f6487585c2b58bc2c9bb4492bc1f17132cd0",
                    "41d1e7a6bc354106cb410e65ff8b181c600ff14292",
                    1000,
                )
            ),
        ),
    )
    signature = bytes.fromhex(
        "97c825b41c77de2a8bd65b3df55cd4c0df59c307c0187e42321dcc1cc455ddba"
        "583dd9502e17cfec5945b34cad0511985a6165999092a6dec84c2bdd97e649fc01"
    )

    transaction = Transaction.build(raw)

    assert transaction.txid == "454f156bf1256587ff6ccdbc56e64ad0c51e4f8efea5490dcbc720ee606bc7b8"
    assert recover_signer(transaction.txid, signature) == address.to_base58(
        "41e552f6487585c2b58bc2c9bb4492bc1f17132cd0"
    )


def test_a_memo_changes_the_txid() -> None:
    # tronpy's offline build left the memo out of the txid: a node then refuses the signature.
    assert Transaction.build(_transfer(memo=b"INV-0001")).txid != Transaction.build(_transfer()).txid


def test_a_signature_is_deterministic_and_recovers_the_owner() -> None:
    raw_bytes = proto.encode_raw(_transfer())

    signature = sign(raw_bytes, KEY)

    assert len(signature) == 65 and signature[64] in (0, 1)
    assert sign(raw_bytes, KEY) == signature
    assert recover_signer(txid(raw_bytes), signature) == OWNER


def test_tronwebs_v_of_27_or_28_recovers_the_same_signer() -> None:
    raw_bytes = proto.encode_raw(_transfer())
    signature = sign(raw_bytes, KEY)

    tronweb_form = signature[:64] + bytes([signature[64] + 27])

    assert recover_signer(bytes.fromhex(txid(raw_bytes)), tronweb_form) == OWNER


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        (bytes(64), "65 bytes"),
        (bytes(64) + b"\x05", "v is 0, 1, 27 or 28"),
        (bytes(65), "recovers no public key"),
    ],
)
def test_a_signature_that_recovers_nobody_is_refused(signature: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        recover_signer("00" * 32, signature)


def test_sign_refuses_bytes_it_cannot_read() -> None:
    unreadable = proto.encode_raw(_transfer()) + bytes.fromhex("4a00")  # an `auths` entry

    with pytest.raises(ProtoError, match="field 9"):
        sign(unreadable, KEY)


@settings(max_examples=30, deadline=None)
@given(raw=raw_datas, secret=st.integers(min_value=1, max_value=2**255))
def test_every_readable_transaction_signs_and_recovers(raw: RawData, secret: int) -> None:
    key = secret.to_bytes(32, "big")

    signed = Transaction.build(raw).signed(key)

    assert signed.signers() == [private_key_address(key)]
    assert Transaction.from_json(signed.to_json()) == signed


# --- the JSON form ------------------------------------------------------------------------------------


def test_the_broadcast_json_has_java_trons_shape() -> None:
    transaction = Transaction.build(_transfer(memo=b"INV-0001")).signed(KEY)

    body = transaction.to_json()

    assert body == {
        "txID": transaction.txid,
        "raw_data": {
            "contract": [
                {
                    "parameter": {
                        "value": {
                            "owner_address": address.to_hex(OWNER),
                            "to_address": address.to_hex(TO),
                            "amount": 5_000_000,
                        },
                        "type_url": "type.googleapis.com/protocol.TransferContract",
                    },
                    "type": "TransferContract",
                }
            ],
            "ref_block_bytes": "abcd",
            "ref_block_hash": "0001020304050607",
            "expiration": 1_700_000_060_000,
            "data": b"INV-0001".hex(),
            "timestamp": 1_700_000_000_000,
        },
        "raw_data_hex": transaction.raw_bytes.hex(),
        "signature": [transaction.signatures[0].hex()],
        "visible": False,
    }


def _node_json(**changes: Any) -> dict[str, Any]:
    body = Transaction.build(_transfer(memo=b"INV-0001")).signed(KEY).to_json()
    body.update(changes)
    return body


def test_a_visible_answer_with_t_addresses_and_upper_case_hex_reads_the_same() -> None:
    body = _node_json(visible=True)
    value = body["raw_data"]["contract"][0]["parameter"]["value"]
    value.update(owner_address=OWNER, to_address=TO)
    body["raw_data"]["ref_block_hash"] = body["raw_data"]["ref_block_hash"].upper()
    body["txID"] = body["txID"].upper()

    assert Transaction.from_json(body).raw == _transfer(memo=b"INV-0001")


def test_a_transaction_with_a_permission_and_fee_limit_reads_back() -> None:
    raw = RawData(
        REF[0],
        REF[1],
        1,
        (Contract(TriggerSmartContract(OWNER, USDT, data=trc20_transfer_data(TO, 1)), permission_id=2),),
        fee_limit=30_000_000,
    )
    body = Transaction.build(raw).to_json()

    assert body["raw_data"]["contract"][0]["Permission_id"] == 2
    assert body["raw_data"]["fee_limit"] == 30_000_000
    assert Transaction.from_json(body).raw == raw


def _drop_memo(body: dict[str, Any]) -> dict[str, Any]:
    del body["raw_data"]["data"]
    return body


def _change_amount(body: dict[str, Any]) -> dict[str, Any]:
    body["raw_data"]["contract"][0]["parameter"]["value"]["amount"] = 6_000_000
    return body


def _change_receiver(body: dict[str, Any]) -> dict[str, Any]:
    body["raw_data"]["contract"][0]["parameter"]["value"]["to_address"] = address.to_hex(OWNER)
    return body


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (_node_json(txID="00" * 32), "not the sha256"),
        (_drop_memo(_node_json()), "raw_data does not say"),
        (_change_amount(_node_json()), "raw_data does not say"),
        (_change_receiver(_node_json()), "raw_data does not say"),
        (_node_json(raw_data_hex=""), "no raw_data_hex"),
        (_node_json(raw_data_hex="abc"), "no raw_data_hex"),
        (_node_json(signature=["00" * 64]), "65 bytes"),
        (_node_json(signature="00" * 65), "a list"),
    ],
)
def test_a_node_json_that_disagrees_with_its_bytes_is_refused(body: dict[str, Any], reason: str) -> None:
    with pytest.raises(TransactionMismatch, match=reason):
        Transaction.from_json(body)


def test_raw_data_json_leaves_defaults_out() -> None:
    raw = RawData(b"", b"", 0, (Contract(TriggerSmartContract(OWNER, USDT)),))

    assert raw_data_json(raw) == {
        "contract": [
            {
                "parameter": {
                    "value": {"owner_address": address.to_hex(OWNER), "contract_address": "41" + USDT_EVM},
                    "type_url": "type.googleapis.com/protocol.TriggerSmartContract",
                },
                "type": "TriggerSmartContract",
            }
        ]
    }


def test_tapos_names_the_block_by_its_height_and_id() -> None:
    block_id = "0000000003a2f1c4" + "1122334455667788" + "00" * 16

    assert tapos(0x03A2F1C4, block_id) == (bytes.fromhex("f1c4"), bytes.fromhex("1122334455667788"))


# --- TRC-20 -------------------------------------------------------------------------------------------


def test_trc20_transfer_calldata_is_the_erc20_abi_with_the_20_byte_address() -> None:
    data = trc20_transfer_data(OWNER, 25_000_000)

    assert data.hex() == (
        "a9059cbb"
        "0000000000000000000000007e5f4552091a69125d5dfcb7b8c2659029395bdf"
        "00000000000000000000000000000000000000000000000000000000017d7840"
    )
    assert decode_trc20_transfer(data) == (OWNER, 25_000_000)


@given(to=st.binary(min_size=20, max_size=20).map(address.from_evm), amount=st.integers(0, 2**256 - 1))
def test_trc20_calldata_reads_back(to: str, amount: int) -> None:
    assert decode_trc20_transfer(trc20_transfer_data(to, amount)) == (to, amount)


@pytest.mark.parametrize(
    "data",
    [
        trc20_transfer_data(OWNER, 1)[:-1],
        trc20_transfer_data(OWNER, 1) + b"\x00",
        bytes.fromhex("23b872dd") + trc20_transfer_data(OWNER, 1)[4:],  # transferFrom's selector
        trc20_transfer_data(OWNER, 1)[:15] + b"\x41" + trc20_transfer_data(OWNER, 1)[16:],
    ],
)
def test_other_calldata_is_not_a_transfer(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_trc20_transfer(data)


@pytest.mark.parametrize("amount", [-1, 2**256, True])
def test_a_trc20_amount_outside_uint256_is_refused(amount: int) -> None:
    with pytest.raises(ValueError, match="TRC-20 amount"):
        trc20_transfer_data(TO, amount)


def _word(hex20: str) -> str:
    return "00" * 12 + hex20


LOG = {
    "address": USDT_EVM,
    "topics": [TRANSFER_TOPIC, _word(address.to_hex(OWNER)[2:]), _word(address.to_hex(TO)[2:])],
    "data": f"{25_000_000:064x}",
}


def test_a_transfer_log_as_java_tron_writes_it_is_read() -> None:
    transfer = parse_transfer_log(LOG)

    assert transfer is not None
    assert (transfer.contract, transfer.from_address, transfer.to_address) == (USDT, OWNER, TO)
    assert transfer.amount == 25_000_000


@pytest.mark.parametrize(
    "log",
    [
        {
            **LOG,
            "topics": [
                "8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925",
                *LOG["topics"][1:],
            ],
        },
        {**LOG, "topics": [*LOG["topics"], "00" * 32]},  # TRC-721: the token id is the fourth topic
        {**LOG, "topics": [LOG["topics"][0], "ff" + LOG["topics"][1][2:], LOG["topics"][2]]},
        {**LOG, "data": LOG["data"] + "00" * 32},
        {**LOG, "address": "not an address"},
        {**LOG, "topics": "ddf2"},
    ],
)
def test_any_other_log_is_not_a_transfer(log: dict[str, Any]) -> None:
    assert parse_transfer_log(log) is None


# --- units --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("units", "decimals", "amount"),
    [
        (1, 6, "0.000001"),
        (5_000_000, 6, "5"),
        (2**256 - 1, 18, "115792089237316195423570985008687907853269984665640564039457.584007913129639935"),
    ],
)
def test_units_convert_exactly_both_ways(units: int, decimals: int, amount: str) -> None:
    assert from_units(units, decimals) == Decimal(amount)
    assert to_units(Decimal(amount), decimals) == units


def test_an_amount_finer_than_the_unit_is_refused_not_rounded() -> None:
    with pytest.raises(ValueError, match="more than 6 decimal places"):
        to_units(Decimal("0.0000001"))
