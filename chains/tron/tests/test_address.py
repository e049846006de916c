from __future__ import annotations

import pytest
from bip_utils import Bip32Secp256k1, Bip39SeedGenerator
from hypothesis import given
from hypothesis import strategies as st

from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.tron import address
from chains.tron.address import InvalidTronAddress
from chains.tron.transaction import private_key_address

# Private key 1: its public key is the curve's generator, so its address is published everywhere
# (Ethereum's 0x7E5F...5Bdf; TronWeb's address.fromPrivateKey gives the same T... address).
KEY_ONE = (1).to_bytes(32, "big")
KEY_ONE_ADDRESS = "TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC"
KEY_ONE_HEX = "417e5f4552091a69125d5dfcb7b8c2659029395bdf"
# m/44'/195'/0'/0/0 of the BIP-39 test mnemonic: the published TRON vector (and TronLink's first account).
ABANDON_FIRST = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"


def test_private_key_one_has_the_published_address() -> None:
    assert private_key_address(KEY_ONE) == KEY_ONE_ADDRESS
    assert address.to_hex(KEY_ONE_ADDRESS) == KEY_ONE_HEX
    assert address.to_evm(KEY_ONE_ADDRESS) == "0x7e5f4552091a69125d5dfcb7b8c2659029395bdf"


def test_the_test_mnemonic_gives_the_published_first_address() -> None:
    seed = Bip39SeedGenerator(DEVELOPMENT_MNEMONIC).Generate()
    key = Bip32Secp256k1.FromSeedAndPath(seed, "m/44'/195'/0'/0/0").PublicKey()

    assert address.from_public_key(key.RawCompressed().ToBytes()) == ABANDON_FIRST
    assert address.from_public_key(key.RawUncompressed().ToBytes()) == ABANDON_FIRST
    assert address.from_public_key(key.RawUncompressed().ToBytes()[1:]) == ABANDON_FIRST


@pytest.mark.parametrize(
    "given",
    [KEY_ONE_ADDRESS, KEY_ONE_HEX, KEY_ONE_HEX.upper(), bytes.fromhex(KEY_ONE_HEX)],
)
def test_every_form_converts_to_every_other(given: str | bytes) -> None:
    assert address.to_base58(given) == KEY_ONE_ADDRESS
    assert address.to_hex(given) == KEY_ONE_HEX
    assert address.to_bytes(given) == bytes.fromhex(KEY_ONE_HEX)


def test_evm_form_converts_both_ways() -> None:
    assert address.from_evm("0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf") == KEY_ONE_ADDRESS
    assert address.from_evm("7e5f4552091a69125d5dfcb7b8c2659029395bdf") == KEY_ONE_ADDRESS
    assert address.from_evm(bytes.fromhex(KEY_ONE_HEX)[1:]) == KEY_ONE_ADDRESS


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HD", "bad checksum"),
        ("TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2H", "T and 33 base58"),
        ("TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2H0", "0, O, I or l"),
        ("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", "T and 33 base58"),  # a Bitcoin address: 0x00 prefix
        ("0x7e5f4552091a69125d5dfcb7b8c2659029395bdf", "T and 33 base58"),
        ("", "T and 33 base58"),
    ],
)
def test_invalid_addresses_say_why(text: str, reason: str) -> None:
    with pytest.raises(InvalidTronAddress, match=reason):
        address.to_bytes(text)


def test_a_base58check_address_of_another_prefix_is_refused() -> None:
    from bip_utils import Base58Encoder

    other = Base58Encoder.CheckEncode(b"\x42" + bytes(20))  # 34 characters, but not 0x41

    with pytest.raises(InvalidTronAddress):
        address.to_bytes(other)
    with pytest.raises(InvalidTronAddress, match="0x41 and 20 bytes"):
        address.to_bytes(b"\x42" + bytes(20))


def test_validate_keeps_the_t_form_and_refuses_the_hex_form() -> None:
    assert address.validate(f" {KEY_ONE_ADDRESS} ") == KEY_ONE_ADDRESS
    assert address.is_valid(KEY_ONE_ADDRESS)
    assert not address.is_valid(KEY_ONE_HEX)
    with pytest.raises(InvalidTronAddress, match="hex form"):
        address.validate(KEY_ONE_HEX)


def test_from_public_key_refuses_what_is_not_a_key() -> None:
    with pytest.raises(InvalidTronAddress, match="secp256k1"):
        address.from_public_key(b"\x02" + bytes(32))


@given(st.binary(min_size=20, max_size=20))
def test_every_account_id_round_trips_through_every_form(account: bytes) -> None:
    text = address.from_evm(account)

    assert text.startswith("T") and len(text) == 34
    assert address.to_evm(text) == "0x" + account.hex()
    assert address.to_base58(address.to_hex(text)) == text
    assert address.validate(text) == text


def test_validate_refuses_what_is_not_text() -> None:
    with pytest.raises(InvalidTronAddress, match="text"):
        address.validate(bytes.fromhex(KEY_ONE_HEX))  # type: ignore[arg-type]
