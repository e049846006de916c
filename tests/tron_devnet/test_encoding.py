"""The devnet's protobuf and addresses against transactions a java-tron node published (TRON's and
QuickNode's API docs): the same JSON gives the same raw_data bytes and txid, in both address forms."""

from __future__ import annotations

import hashlib

import pytest

from tests.tron_devnet.encoding import (
    DecodeError,
    address_bytes,
    b58check_encode,
    raw_decode,
    raw_encode,
    raw_from_json,
    raw_to_json,
)
from tests.tron_devnet.keys import Key, recover

TRANSFER = {
    "raw_data": {
        "contract": [
            {
                "parameter": {
                    "value": {
                        "amount": 1000,
                        "owner_address": "41608f8da72479edc7dd921e4c30bb7e7cddbe722e",
                        "to_address": "41e9d79cc47518930bc322d9bf7cddd260a0260a8d",
                    },
                    "type_url": "type.googleapis.com/protocol.TransferContract",
                },
                "type": "TransferContract",
            }
        ],
        "ref_block_bytes": "5e4b",
        "ref_block_hash": "47c9dc89341b300d",
        "expiration": 1591089627000,
        "timestamp": 1591089567635,
    },
    "raw_data_hex": "0a025e4b220847c9dc89341b300d40f8fed3a2a72e5a66080112620a2d747970652e676f6f676c6561706973"
    "2e636f6d"
    "2f70726f746f636f6c2e5472616e73666572436f6e747261637412310a1541608f8da72479edc7dd921e4c30bb7e7cddbe722e"
    "121541e9d79cc47518930bc322d9bf7cddd260a0260a8d18e8077093afd0a2a72e",
}
TRIGGER = {
    "raw_data": {
        "contract": [
            {
                "parameter": {
                    "value": {
                        "data": "a9059cbb00000000000000000000004150125bea243a640bf85348873b6c4f3c517aee7a"
                        "0000000000000000000000000000000000000000000000000000000000000001",
                        "owner_address": "41495511a493d8c362be4267224e6d81013a6862ee",
                        "contract_address": "41eca9bc828a3005b9a3b909f2cc5c2a54794de05f",
                    },
                    "type_url": "type.googleapis.com/protocol.TriggerSmartContract",
                },
                "type": "TriggerSmartContract",
            }
        ],
        "ref_block_bytes": "8ad9",
        "ref_block_hash": "eaef69105495eb15",
        "expiration": 1773182914544,
        "fee_limit": 100000000,
        "timestamp": 1773182854544,
    },
    "raw_data_hex": "0a028ad92208eaef69105495eb1540f09fc0cfcd335aae01081f12a9010a31747970652e676f6f676c6561"
    "7069732e63"
    "6f6d2f70726f746f636f6c2e54726967676572536d617274436f6e747261637412740a1541495511a493d8c362be4267224e6d81"
    "013a6862ee121541eca9bc828a3005b9a3b909f2cc5c2a54794de05f2244a9059cbb00000000000000000000004150125bea243a"
    "640bf85348873b6c4f3c517aee7a00000000000000000000000000000000000000000000000000000000000000017090cbbccfcd"
    "33900180c2d72f",
}
# java-tron's HTTP API docs pair these T-addresses with these hex forms (visible=true and false)
T_ADDRESSES = {
    "TRGhNNfnmgLegT4zHNjEqDSADjgmnHvubJ": "41a7d8a35b260395c14aa456297662092ba3b76fc0",
    "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW": "415a523b449890854c8fc460ab602df9f31fe4293f",
}
# a TransferContract and the txID its node answered
TXID_RAW = (
    "0a0202a22208e216e254e43ee10840c8cbe4e3df2d5a67080112630a2d747970652e676f6f676c65617069732e636f6d2f70726f"
    "746f636f6c2e5472616e73666572436f6e747261637412320a15415c68cc82c87446f602f019e5fd797437f5b79cc212154156a6"
    "076cd1537fa317c2606e4edfa4acd3e8e92e18a08d06709084e1e3df2d"
)
TXID = "88817b9c6276e3c535e4f8f15baf546292ca6ad9d44a7d97857bd6f8909d63d4"


@pytest.mark.parametrize("published", [TRANSFER, TRIGGER], ids=["transfer", "trigger-with-fee-limit"])
def test_published_raw_data_encodes_to_its_raw_data_hex(published: dict) -> None:
    raw_bytes = raw_encode(raw_from_json(published["raw_data"]))

    assert raw_bytes.hex() == published["raw_data_hex"]
    assert raw_to_json(raw_decode(raw_bytes), visible=False) == published["raw_data"]


def test_the_visible_form_spells_the_same_bytes_with_t_addresses() -> None:
    raw_bytes = bytes.fromhex(TRANSFER["raw_data_hex"])

    visible = raw_to_json(raw_decode(raw_bytes), visible=True)

    value = visible["contract"][0]["parameter"]["value"]
    assert value["owner_address"].startswith("T") and value["to_address"].startswith("T")
    assert raw_encode(raw_from_json(visible)) == raw_bytes


@pytest.mark.parametrize(("text", "hex_form"), T_ADDRESSES.items())
def test_base58check_matches_published_addresses(text: str, hex_form: str) -> None:
    assert b58check_encode(bytes.fromhex(hex_form)) == text
    assert address_bytes(text).hex() == hex_form


def test_the_txid_is_the_sha256_of_raw_data() -> None:
    assert hashlib.sha256(bytes.fromhex(TXID_RAW)).hexdigest() == TXID


def test_addresses_are_0x41_and_20_bytes_in_either_form() -> None:
    raw = bytes.fromhex(T_ADDRESSES["TRGhNNfnmgLegT4zHNjEqDSADjgmnHvubJ"])

    assert address_bytes("TRGhNNfnmgLegT4zHNjEqDSADjgmnHvubJ") == raw == address_bytes(raw.hex())
    for bad in ("TRGhNNfnmgLegT4zHNjEqDSADjgmnHvubK", "42" + raw.hex()[2:], raw.hex()[:-2], "T0"):
        with pytest.raises(DecodeError):
            address_bytes(bad)


def test_a_signature_recovers_to_its_key_and_nothing_else() -> None:
    key, txid = Key.from_seed("signer"), bytes.fromhex(TXID)

    signature = key.sign_txid(txid)

    assert recover(txid, signature) == key.raw_address
    assert recover(txid, signature[:64] + bytes([signature[64] + 27])) == key.raw_address
    assert recover(bytes(32), signature) != key.raw_address
    assert recover(txid, signature[:64]) is None


def test_a_truncated_or_foreign_raw_data_is_refused() -> None:
    raw_bytes = bytes.fromhex(TRANSFER["raw_data_hex"])

    for bad in (raw_bytes[:-3], raw_bytes + b"\x98\x01\x01", b""):
        with pytest.raises(DecodeError):
            raw_decode(bad)
