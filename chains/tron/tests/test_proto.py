from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chains.tron import address, proto
from chains.tron.proto import (
    Contract,
    DelegateResourceContract,
    ProtoError,
    RawData,
    Resource,
    TransferContract,
    TriggerSmartContract,
)
from chains.tron.tests.strategies import contracts, raw_datas

OWNER = "TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC"
TO = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"


def _raw(parameter: proto.ContractMessage, **fields: object) -> RawData:
    base: dict[str, object] = {
        "ref_block_bytes": b"\xab\xcd",
        "ref_block_hash": bytes(range(8)),
        "expiration": 1_700_000_060_000,
        "timestamp": 1_700_000_000_000,
        "contracts": (Contract(parameter),),
    }
    return RawData(**{**base, **fields})  # type: ignore[arg-type]


TRANSFER = _raw(TransferContract(OWNER, TO, 5_000_000), data=b"INV-0001")


@given(raw_datas)
def test_what_is_written_reads_back_the_same(raw: RawData) -> None:
    data = proto.encode_raw(raw)

    back = proto.decode_raw(data)

    assert back == raw  # the strategies give T... addresses, the form read back
    assert proto.encode_raw(back) == data


@given(contracts)
def test_every_contract_message_reads_back(message: proto.ContractMessage) -> None:
    assert proto.decode_message(type(message), proto.encode_message(message)) == message


def test_a_transfer_is_written_as_java_tron_writes_it() -> None:
    # Field by field: 1 ref_block_bytes, 4 ref_block_hash, 8 expiration, 10 data, 11 contract (type 1,
    # Any(type_url, value)), 14 timestamp; TransferContract 1 owner, 2 to, 3 amount.
    data = proto.encode_raw(TRANSFER)

    assert data.hex() == (
        "0a02abcd"
        "22080001020304050607"
        "40e0a499ffbc31"
        "5208494e562d30303031"
        "5a6808011264"
        "0a2d747970652e676f6f676c65617069732e636f6d2f70726f746f636f6c2e5472616e73666572436f6e7472616374"
        "1233"
        "0a15417e5f4552091a69125d5dfcb7b8c2659029395bdf"
        "121541c8599111f29c1e1e061265b4af93ea1f274ad78a"
        "18c096b102"
        "7080d095ffbc31"
    )


def test_defaults_are_left_out() -> None:
    message = DelegateResourceContract(OWNER, Resource.BANDWIDTH, 0, TO)

    data = proto.encode_message(message)

    # resource BANDWIDTH (0), balance 0 and lock false are not written: fields 1 and 4 only.
    assert (
        data.hex() == "0a15417e5f4552091a69125d5dfcb7b8c2659029395bdf"
        "221541c8599111f29c1e1e061265b4af93ea1f274ad78a"
    )


def test_a_negative_int64_is_ten_bytes_and_reads_back() -> None:
    raw = _raw(TransferContract(OWNER, TO, -1))

    data = proto.encode_raw(raw)

    assert bytes.fromhex("18ffffffffffffffffff01") in data
    assert proto.decode_raw(data) == raw


def _rewritten(raw: RawData, old: bytes, new: bytes) -> bytes:
    data = proto.encode_raw(raw)
    assert data.count(old) == 1
    return data.replace(old, new)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        # raw_data field 9 (auths) and 12 (scripts): Kassa never writes them, so never signs them.
        (proto.encode_raw(TRANSFER) + bytes.fromhex("4a00"), "field 9"),
        (proto.encode_raw(TRANSFER) + bytes.fromhex("6200"), "field 12"),
        (proto.encode_raw(TRANSFER) + bytes.fromhex("7801"), "field 15"),
        (bytes.fromhex("0a02abcd"), "no contract"),
        (proto.encode_raw(TRANSFER)[:-1], "end inside a varint"),
        (proto.encode_raw(TRANSFER) + bytes.fromhex("0a05ab"), "past the end"),
        (proto.encode_raw(TRANSFER) + bytes.fromhex("0d00000000"), "wire type 5"),
        # The same ref_block_bytes twice: a reader taking the last and one taking the first disagree.
        (bytes.fromhex("0a02abcd") + proto.encode_raw(TRANSFER), "twice"),
        # expiration written with an overlong varint, and amount 0 written out: not canonical.
        (
            _rewritten(TRANSFER, bytes.fromhex("40e0a499ffbc31"), bytes.fromhex("40e0a499ffbcb100")),
            "canonical",
        ),
    ],
)
def test_what_cannot_be_read_fully_is_refused(data: bytes, reason: str) -> None:
    with pytest.raises(ProtoError, match=reason):
        proto.decode_raw(data)


def _contract_bytes(type_number: int, type_url: str, value: bytes, extra: bytes = b"") -> bytes:
    any_value = proto._len(1, type_url.encode()) + proto._len(2, value)
    contract = proto._int(1, type_number) + proto._len(2, any_value) + extra
    return bytes.fromhex("0a02abcd") + proto._len(11, contract)


TRANSFER_VALUE = proto.encode_message(TransferContract(OWNER, TO, 1))
URL = proto.TYPE_URL_PREFIX


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_contract_bytes(54, URL + "FreezeBalanceV2Contract", TRANSFER_VALUE), "type 54"),
        (_contract_bytes(1, URL + "TriggerSmartContract", TRANSFER_VALUE), "TriggerSmartContract"),
        (_contract_bytes(1, "TransferContract", TRANSFER_VALUE), "'TransferContract'"),
        (_contract_bytes(1, URL + "TransferContract", TRANSFER_VALUE, bytes.fromhex("1a0101")), "field 3"),
        (_contract_bytes(1, URL + "TransferContract", TRANSFER_VALUE, bytes.fromhex("220101")), "field 4"),
        (_contract_bytes(1, URL + "TransferContract", TRANSFER_VALUE + bytes.fromhex("2001")), "field 4"),
        (_contract_bytes(1, URL + "TransferContract", TRANSFER_VALUE[23:]), "no owner_address"),
        (
            _contract_bytes(1, URL + "TransferContract", bytes.fromhex("0a020000") + TRANSFER_VALUE[23:]),
            "0x41",
        ),
        (
            _contract_bytes(
                57, URL + "DelegateResourceContract", TRANSFER_VALUE[:46] + bytes.fromhex("1007")
            ),
            "wrong wire type",
        ),
        # amount 0 written out, which protobuf 3 leaves out: a second writing of the same transaction.
        (
            _contract_bytes(1, URL + "TransferContract", TRANSFER_VALUE[:46] + bytes.fromhex("1800")),
            "canonical",
        ),
    ],
)
def test_a_contract_kassa_does_not_know_fully_is_refused(data: bytes, reason: str) -> None:
    with pytest.raises(ProtoError, match=reason):
        proto.decode_raw(data)


def test_an_unknown_enum_value_is_refused() -> None:
    value = proto.encode_message(DelegateResourceContract(OWNER, Resource.ENERGY, 1, TO)).replace(
        bytes.fromhex("1001"), bytes.fromhex("1007")
    )

    with pytest.raises(ProtoError, match="resource = 7"):
        proto.decode_message(DelegateResourceContract, value)


@pytest.mark.parametrize(
    "raw",
    [
        _raw(TransferContract(OWNER, TO, 2**63)),
        _raw(TriggerSmartContract(OWNER, TO, data="a9059cbb")),  # type: ignore[arg-type]
        _raw(TransferContract(OWNER, TO, 1), contracts=()),
        RawData(b"", b"", 0, (Contract(TransferContract(OWNER, TO, 1), permission_id=2**31),)),
    ],
)
def test_what_cannot_be_written_is_refused(raw: RawData) -> None:
    with pytest.raises(ProtoError):
        proto.encode_raw(raw)


def test_a_message_keeps_every_address_as_t_and_refuses_what_is_not_one() -> None:
    given_in_hex = TransferContract(address.to_hex(OWNER), address.to_hex(TO), 1)

    assert given_in_hex == TransferContract(OWNER, TO, 1)
    with pytest.raises(address.InvalidTronAddress):
        TransferContract(OWNER, "T" + "1" * 33, 1)


@given(st.binary(max_size=300))
def test_any_bytes_read_or_refused_never_crash(data: bytes) -> None:
    try:
        raw = proto.decode_raw(data)
    except ProtoError:
        return
    assert proto.encode_raw(raw) == data
