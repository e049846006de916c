"""Address validation per payment code (chains/addresses.py; docs/decisions.md).

Vectors are published ones where they exist: BIP-173/BIP-350, the CashAddr spec, EIP-55, Litecoin Core's
key_io_valid.json, nearcore's account-ID tests, ton.org's address docs. A few are derived here from those
(same hash, other network or encoding); each says what it was derived from.
"""

from __future__ import annotations

import pytest
from bip_utils.ecc import Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from chains.addresses import InvalidAddress, is_valid_address, validate_address
from core.errors import UnsupportedAsset

EVM_CODES = ["eth", "usdterc20", "usdc", "bnb"]
TRON_CODES = ["trx", "trc20usdt"]
ALL_CODES = ["btc", *EVM_CODES, *TRON_CODES, "sol", "ton", "ltc", "bch", "near"]

BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
HEX = "0123456789abcdef"
BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _mutate(address: str, alphabet: str, at: int | None = None) -> str:
    """A one-character typo: the character in the middle replaced by the next one of its alphabet."""
    index = len(address) // 2 if at is None else at
    char = address[index]
    lower = char.lower() if alphabet in (BECH32, HEX) else char
    replacement = alphabet[(alphabet.index(lower) + 1) % len(alphabet)]
    if char.isupper() and alphabet in (BECH32, HEX):
        replacement = replacement.upper()
    mutated = address[:index] + replacement + address[index + 1 :]
    assert mutated != address and len(mutated) == len(address)
    return mutated


def _refused(code: str, address: str) -> None:
    with pytest.raises(InvalidAddress) as excinfo:
        validate_address(code, address)
    assert str(excinfo.value) == f"not a valid {code} address"
    assert is_valid_address(code, address) is False


# --- Bitcoin ------------------------------------------------------------------------------------------

BTC_VALID = [
    # (address, stored form)
    ("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"),  # genesis coinbase, P2PKH
    ("1BpEi6DfDAUFd7GtittLSdBeYJvcoaVggu", "1BpEi6DfDAUFd7GtittLSdBeYJvcoaVggu"),  # CashAddr spec, P2PKH
    ("3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy"),  # P2SH
    ("3CWFddi6m4ndiGyKqzYvsFYagqDLPVMTzC", "3CWFddi6m4ndiGyKqzYvsFYagqDLPVMTzC"),  # CashAddr spec, P2SH
    # BIP-173: P2WPKH, upper and lower case (stored lowercase)
    ("BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"),
    ("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"),
    # BIP-173: P2WSH (32-byte v0 program)
    (
        "bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3",
        "bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3",
    ),
    # BIP-350: P2TR (v1, 32 bytes, bech32m); BIP-86's first address
    (
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
    ),
    (
        "bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr",
        "bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr",
    ),
]


@pytest.mark.parametrize(("address", "stored"), BTC_VALID)
def test_btc_accepts_mainnet_address_and_returns_stored_form(address: str, stored: str) -> None:
    result = validate_address("btc", address)

    assert result == stored
    assert is_valid_address("btc", address) is True


@pytest.mark.parametrize(
    "address",
    [
        # BIP-350 valid strings whose outputs nobody can claim today: refused (see module docstring)
        "bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y",  # v1, 40 bytes
        "BC1SW50QGDZ25J",  # v16, 2 bytes
        "bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs",  # v2, 16 bytes
        # BIP-350 invalid vectors
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd",  # v1 with a bech32 checksum
        "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh",  # v0 with a bech32m checksum
        "BC1S0XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ54WELL",  # v16 with a bech32 checksum
        "bc1p38j9r5y49hruaue7wxjce0updqjuyyx0kh56v8s25huc6995vvpql3jow4",  # invalid character
        "BC130XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ7ZWS8R",  # witness version 17
        "bc1pw5dgrnzv",  # 1-byte program
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v8n0nx0muaewav253zgeav",  # 41-byte program
        "BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P",  # v0 with a 16-byte program
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq47Zagq",  # mixed case
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v07qwwzcrf",  # over 4 bits of padding
        "bc1gmk9yu",  # empty data
        # the BIP-173 P2WSH program under a bech32m checksum (derived)
        "bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qdyehfn",
    ],
)
def test_btc_refuses_unspendable_or_malformed_segwit(address: str) -> None:
    _refused("btc", address)


@pytest.mark.parametrize(
    "address",
    [
        "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx",  # BIP-173 testnet P2WPKH
        "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7",  # BIP-173 testnet P2WSH
        "tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c",  # BIP-350 testnet P2TR
        "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080",  # regtest
        "mrCDrCybB6J1vRfbwM5hemdJz73FwDBC8r",  # testnet P2PKH (m…)
        "n4rZHAPGXCu8bYchjzJhK3V7VVreascJxe",  # testnet P2PKH (n…), version 0x6f over 20 0xff bytes
        "2NByiBUaEXrhmqAsg7BbLpcQSAQs1EDwt5w",  # testnet P2SH
        "LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA",  # Litecoin P2PKH
        "MHrYRxAiMNBTku3eoDHwhA1LQGDjUStZW2",  # Litecoin P2SH
        "ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9",  # Litecoin P2WPKH
        "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",  # Bitcoin Cash
        "qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",  # Ethereum
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",  # TRON
    ],
)
def test_btc_refuses_other_networks(address: str) -> None:
    _refused("btc", address)


@pytest.mark.parametrize(
    ("address", "alphabet"),
    [
        ("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", BASE58),
        ("3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", BASE58),
        ("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", BECH32),
        ("bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3", BECH32),
        ("bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", BECH32),
    ],
)
def test_btc_refuses_one_character_typo_and_truncation(address: str, alphabet: str) -> None:
    _refused("btc", _mutate(address, alphabet))
    _refused("btc", address[:-1])


# --- Litecoin -----------------------------------------------------------------------------------------

LTC_VALID = [
    # Litecoin Core key_io_valid.json (mainnet)
    ("LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA", "LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA"),
    ("LbfVMz974gbbGFqXF7FZUpSBWSbwBHDwR5", "LbfVMz974gbbGFqXF7FZUpSBWSbwBHDwR5"),
    ("MHrYRxAiMNBTku3eoDHwhA1LQGDjUStZW2", "MHrYRxAiMNBTku3eoDHwhA1LQGDjUStZW2"),
    ("M9dw1FAoWpHC6PcMzoCHhqQ9McvTyG5Ywj", "M9dw1FAoWpHC6PcMzoCHhqQ9McvTyG5Ywj"),
    # BIP-173's P2WPKH program under the `ltc` HRP, upper and lower case
    ("ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9", "ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9"),
    ("LTC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KGMN4N9", "ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9"),
    # derived: BIP-173's P2WSH and BIP-350's P2TR programs under the `ltc` HRP
    (
        "ltc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qmu8tk5",
        "ltc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qmu8tk5",
    ),
    (
        "ltc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqpj6zg2",
        "ltc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqpj6zg2",
    ),
]


@pytest.mark.parametrize(("address", "stored"), LTC_VALID)
def test_ltc_accepts_mainnet_address_and_returns_stored_form(address: str, stored: str) -> None:
    result = validate_address("ltc", address)

    assert result == stored
    assert is_valid_address("ltc", address) is True


@pytest.mark.parametrize(
    "address",
    [
        "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa",  # Bitcoin P2PKH
        "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",  # Bitcoin P2SH
        # deprecated Litecoin `3…` P2SH: the same script as MHrYRxAiMNBTku3eoDHwhA1LQGDjUStZW2, refused
        "3BeQ84kkQFL2xPmkhLJbsWkw5ZdHV1u25v",
        "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4",  # Bitcoin P2WPKH
        "mwXn5Vhicdav8Av3KMokx4YNuHoGRKxtWs",  # Litecoin testnet P2PKH (key_io_valid.json)
        "QXaUgLHkZcbJb2j5XgMYzY8cF9YM48Y81Z",  # Litecoin testnet P2SH (key_io_valid.json)
        "tltc1qw508d6qejxtdg4y5r3zarvary0c5xw7klfsuq0",  # Litecoin testnet P2WPKH
        "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    ],
)
def test_ltc_refuses_other_networks_and_the_deprecated_p2sh_form(address: str) -> None:
    _refused("ltc", address)


@pytest.mark.parametrize(
    ("address", "alphabet"),
    [
        ("LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA", BASE58),
        ("MHrYRxAiMNBTku3eoDHwhA1LQGDjUStZW2", BASE58),
        ("ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9", BECH32),
    ],
)
def test_ltc_refuses_one_character_typo_and_truncation(address: str, alphabet: str) -> None:
    _refused("ltc", _mutate(address, alphabet))
    _refused("ltc", address[:-1])


# --- Bitcoin Cash -------------------------------------------------------------------------------------

# CashAddr spec test vectors: P2PKH (q…) and P2SH (p…)
BCH_SPEC = [
    "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
    "bitcoincash:qr95sy3j9xwd2ap32xkykttr4cvcu7as4y0qverfuy",
    "bitcoincash:qqq3728yw0y47sqn6l2na30mcw6zm78dzqre909m2r",
    "bitcoincash:ppm2qsznhks23z7629mms6s4cwef74vcwvn0h829pq",
    "bitcoincash:pr95sy3j9xwd2ap32xkykttr4cvcu7as4yc93ky28e",
    "bitcoincash:pqq3728yw0y47sqn6l2na30mcw6zm78dzq5ucqzc37",
]


@pytest.mark.parametrize("stored", BCH_SPEC)
@pytest.mark.parametrize("spelling", ["as published", "without prefix", "upper case", "upper, no prefix"])
def test_bch_accepts_cashaddr_with_or_without_prefix_in_one_case(stored: str, spelling: str) -> None:
    address = {
        "as published": stored,
        "without prefix": stored.removeprefix("bitcoincash:"),
        "upper case": stored.upper(),
        "upper, no prefix": stored.removeprefix("bitcoincash:").upper(),
    }[spelling]

    result = validate_address("bch", address)

    assert result == stored


@pytest.mark.parametrize(
    "address",
    [
        "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvY22gdx6a",  # mixed case
        "BITCOINCASH:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",  # mixed case across the prefix
        # derived from the spec's first vector's hash: testnet and regtest prefixes
        "bchtest:qpm2qsznhks23z7629mms6s4cwef74vcwvqcw003ap",
        "bchreg:qpm2qsznhks23z7629mms6s4cwef74vcwv6ycwvz78",
        # valid checksum under the testnet prefix, offered as mainnet
        "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvqcw003ap",
        "qpm2qsznhks23z7629mms6s4cwef74vcwvqcw003ap",
        # legacy base58 of the spec's vectors (same hashes): refused, indistinguishable from Bitcoin
        "1BpEi6DfDAUFd7GtittLSdBeYJvcoaVggu",
        "3CWFddi6m4ndiGyKqzYvsFYagqDLPVMTzC",
        # token-aware P2PKH (version 0x10) of the same hash, and a P2SH32 (version 0x0b): not supported
        "bitcoincash:zpm2qsznhks23z7629mms6s4cwef74vcwvrqekrq9w",
        "bitcoincash:pvqqzqsrqszsvpcgpy9qkrqdpc83qygjzv2p29shrqv35xcur50p7h2c7ctj5",
        "bitcoincash:bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
        "bitcoincash:",
        "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4",
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    ],
)
def test_bch_refuses_other_networks_legacy_and_malformed(address: str) -> None:
    _refused("bch", address)


@pytest.mark.parametrize("stored", [BCH_SPEC[0], BCH_SPEC[3]])
def test_bch_refuses_one_character_typo_and_truncation(stored: str) -> None:
    _refused("bch", _mutate(stored, BECH32))
    _refused("bch", stored[:-1])
    _refused("bch", _mutate(stored.removeprefix("bitcoincash:"), BECH32))


# --- EVM (eth, usdterc20, usdc, bnb) ------------------------------------------------------------------

EIP55_CHECKSUMMED = [
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
]
# EIP-55's all-caps and all-lower examples: no checksum, accepted
EIP55_SINGLE_CASE = [
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
    "0xde709f2102306220921060314715629080e2fb77",
    "0x27b1fdb04752bbc536007a920d24acb045561c26",
]


@pytest.mark.parametrize("code", EVM_CODES)
@pytest.mark.parametrize("address", EIP55_CHECKSUMMED + EIP55_SINGLE_CASE)
def test_evm_accepts_eip55_and_single_case_addresses_as_given(code: str, address: str) -> None:
    result = validate_address(code, address)

    assert result == address


@pytest.mark.parametrize("code", EVM_CODES)
@pytest.mark.parametrize("address", EIP55_CHECKSUMMED)
def test_evm_accepts_the_all_lowercase_form_of_a_checksummed_address(code: str, address: str) -> None:
    lowered = "0x" + address[2:].lower()

    assert validate_address(code, lowered) == lowered


@pytest.mark.parametrize("code", EVM_CODES)
@pytest.mark.parametrize(
    "address",
    [
        "0x5aaeb6053F3E94C9b9A09f33669435E7Ef1BeAed",  # one letter's case flipped (A -> a)
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD",  # last letter's case flipped
        "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5D359",
        "0xdbF03B407c01E7cD3CBea99509d93f8dddc8C6FB",
        "0xd1220a0cf47c7b9be7a2e6ba89f429762e7b9aDb",
    ],
)
def test_evm_refuses_wrong_eip55_case(code: str, address: str) -> None:
    _refused(code, address)


@pytest.mark.parametrize("code", EVM_CODES)
@pytest.mark.parametrize(
    "address",
    [
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe",  # truncated
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed0",  # one too many
        "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",  # no 0x
        "0X5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED",  # upper-case prefix
        "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaeg",  # not hex
        "0x5aaeb6053f3e94c9b9a09f33669435e7ef1be ed",  # inner space
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",  # TRON
        "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",  # TRON in hex
        "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa",
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        "alice.near",
    ],
)
def test_evm_refuses_malformed_and_other_networks(code: str, address: str) -> None:
    _refused(code, address)


@pytest.mark.parametrize("address", EIP55_CHECKSUMMED)
def test_evm_refuses_a_hex_digit_typo_in_a_checksummed_address(address: str) -> None:
    _refused("eth", _mutate(address, HEX, at=len(address) - 1))


# --- TRON (trx, trc20usdt) ----------------------------------------------------------------------------

TRON_VALID = [
    "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",  # USDT TRC-20 contract
    "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7",
    "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",  # 0x41 + 20 zero bytes (the black-hole address)
]


@pytest.mark.parametrize("code", TRON_CODES)
@pytest.mark.parametrize("address", TRON_VALID)
def test_tron_accepts_base58check_t_address_as_given(code: str, address: str) -> None:
    result = validate_address(code, address)

    assert result == address


@pytest.mark.parametrize("code", TRON_CODES)
@pytest.mark.parametrize(
    "address",
    [
        _mutate("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", BASE58),
        _mutate("TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7", BASE58),
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6",  # truncated
        "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",  # the USDT contract in hex
        "0xa614f803b6fd780986a42c78ec9c7f77e6ded13c",  # ... and as an EVM address
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa",  # base58check with the Bitcoin version byte
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    ],
)
def test_tron_refuses_typos_and_other_networks(code: str, address: str) -> None:
    _refused(code, address)


# --- TON ----------------------------------------------------------------------------------------------

# ton.org's address docs: one wallet in its forms
TON_BOUNCEABLE = "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHF"
TON_NON_BOUNCEABLE = "UQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPuwA"
TON_RAW = "0:ca6e321c7cce9ecedf0a8ca2492ec8592494aa5fb5ce0387dff96ef6af982a3e"
TON_TEST_ONLY = "kQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPgpP"


@pytest.mark.parametrize(
    ("address", "stored"),
    [
        (TON_BOUNCEABLE, TON_BOUNCEABLE),
        (TON_NON_BOUNCEABLE, TON_NON_BOUNCEABLE),
        # the same in standard base64 (`+` for `-`)
        (
            "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff+W72r5gqPrHF",
            "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff+W72r5gqPrHF",
        ),
        (TON_RAW, TON_RAW),
        (TON_RAW.upper(), TON_RAW),  # raw hex is stored lowercase
        # the elector contract (masterchain), user-friendly and raw
        (
            "Ef8zMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM0vF",
            "Ef8zMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM0vF",
        ),
        ("-1:" + "33" * 32, "-1:" + "33" * 32),
        # TON Foundation's wallet
        (
            "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N",
            "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N",
        ),
        # derived, with two url-safe characters, and its standard-base64 spelling
        (
            "EQAGADIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPjc_",
            "EQAGADIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPjc_",
        ),
        (
            "EQAGADIcfM6ezt8KjKJJLshZJJSqX7XOA4ff+W72r5gqPjc/",
            "EQAGADIcfM6ezt8KjKJJLshZJJSqX7XOA4ff+W72r5gqPjc/",
        ),
    ],
)
def test_ton_accepts_user_friendly_and_raw_forms(address: str, stored: str) -> None:
    result = validate_address("ton", address)

    assert result == stored


def test_ton_forms_pytoniq_produces_for_the_docs_address_are_the_published_ones() -> None:
    from pytoniq_core import Address

    address = Address(TON_RAW)

    assert address.to_str(is_bounceable=True) == TON_BOUNCEABLE
    assert address.to_str(is_bounceable=False) == TON_NON_BOUNCEABLE
    assert address.to_str(is_test_only=True) == TON_TEST_ONLY


@pytest.mark.parametrize(
    "address",
    [
        TON_TEST_ONLY,  # test-only, bounceable
        "0QDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPleK",  # test-only, non-bounceable (derived)
        _mutate(TON_BOUNCEABLE, BASE64URL),  # CRC16 fails
        _mutate(TON_NON_BOUNCEABLE, BASE64URL, at=5),
        TON_BOUNCEABLE[:-1],
        TON_BOUNCEABLE + "A",
        "EQAGADIcfM6ezt8KjKJJLshZJJSqX7XOA4ff+W72r5gqPjc_",  # both base64 alphabets in one string
        "EQHKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPjwZ",  # workchain 1, valid CRC (derived)
        "AADKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPn6Z",  # tag 0x00, valid CRC (derived)
        "EgDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPgWL",  # tag 0x12, valid CRC (derived)
        "1:" + TON_RAW[2:],  # raw, workchain 1
        "+0:" + TON_RAW[2:],
        "0:" + TON_RAW[2:-1],  # 63 hex
        "0:" + TON_RAW[2:] + "0",  # 65 hex
        "0:0x" + TON_RAW[4:],
        "0:" + TON_RAW[2:-2] + " e",
        "0:ab",
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    ],
)
def test_ton_refuses_test_only_bad_crc_other_workchains_and_malformed(address: str) -> None:
    _refused("ton", address)


# --- Solana -------------------------------------------------------------------------------------------

SOL_VALID = [
    "11111111111111111111111111111111",  # system program (32 zero bytes)
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",  # SPL token program
    "So11111111111111111111111111111111111111112",  # wrapped SOL mint
    "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",  # USDC mint
    "8qbHbw2BbbTHBW1sbeqakYXVKRQM8Ne7pLK7m6CVfeR",  # 32 bytes of 0x02: off the ed25519 curve, like a PDA
]


@pytest.mark.parametrize("address", SOL_VALID)
def test_sol_accepts_base58_of_exactly_32_bytes_as_given(address: str) -> None:
    result = validate_address("sol", address)

    assert result == address


def test_sol_off_curve_vector_is_really_off_the_curve() -> None:
    assert Ed25519PublicKey.IsValidBytes(bytes([2]) * 32) is False


@pytest.mark.parametrize(
    "address",
    [
        # base58 that decodes to 33 bytes (a miscopied token-program ID seen in the wild)
        "TokenkegQfeZyiNwAJbNbGNnYBGk7nFxVUmgwUDvnwPH",
        "1111111111111111111111111111111",  # 31 bytes
        "111111111111111111111111111111111",  # 33 bytes
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGk",  # truncated: 26 bytes
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1vX",  # one too many
        "EPjFWdd5AufqSSqeM2qN1xzybap08G4wEGGkZwyTDt1v",  # `0` is not base58
        "EPjFWdd5AufqSSqeM2qN1xzybapO8G4wEGGkZwyTDt1v",  # `O` is not base58
        "EPjFWdd5AufqSSqeM2qN1xzybapl8G4wEGGkZwyTDt1v",  # `l` is not base58
        "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa",  # Bitcoin: 25 bytes
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",  # TRON: 25 bytes
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        TON_BOUNCEABLE,
        "98793cd91a3f870fb126f66285808c7e094afcfc4eda8a970f6648cdf0dbd6de",  # NEAR implicit (hex)
    ],
)
def test_sol_refuses_wrong_length_non_base58_and_other_networks(address: str) -> None:
    _refused("sol", address)


# --- NEAR ---------------------------------------------------------------------------------------------

# nearcore's account-ID tests (valid), plus implicit and ETH-implicit accounts
NEAR_VALID = [
    "aa",
    "a-a",
    "a-aa",
    "100",
    "0o",
    "com",
    "near",
    "bowen",
    "b-o_w_e-n",
    "b.owen",
    "bro.wen",
    "a.ha",
    "a.b-a.ra",
    "system",
    "over.9000",
    "google.com",
    "illia.cheapaccounts.near",
    "0o0ooo00oo00o",
    "alex-skidanov",
    "10-4.8-2",
    "no_lols",
    "sweat_welcome.near",
    "app.nearcrowd.near",
    "0123456789012345678901234567890123456789012345678901234567890123",  # 64 digits: implicit, on curve
    "98793cd91a3f870fb126f66285808c7e094afcfc4eda8a970f6648cdf0dbd6de",  # implicit (nearcore)
    "0xb794f5ea0ba39494ce839613fffba74279579268",  # ETH-implicit (NEP-518)
    "0x" + "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"[2:].lower(),
]


@pytest.mark.parametrize("address", NEAR_VALID)
def test_near_accepts_named_implicit_and_eth_implicit_accounts_as_given(address: str) -> None:
    result = validate_address("near", address)

    assert result == address


@pytest.mark.parametrize(
    "address",
    [
        # nearcore's account-ID tests (invalid)
        "a",
        "A",
        "Abc",
        "-near",
        "near-",
        "-near-",
        "near.",
        ".near",
        "near@",
        "@near",
        "неар",
        "@@@@@",
        "0__0",
        "0_-_0",
        "..",
        "a..near",
        "nEar",
        "_bowen",
        "hello world",
        "abcdefghijklmnopqrstuvwxyz.abcdefghijklmnopqrstuvwxyz.abcdefghijklmnopqrstuvwxyz",
        "01234567890123456789012345678901234567890123456789012345678901234",  # 65 characters
        # testnet accounts on a mainnet service
        "alice.testnet",
        "app.alice.testnet",
        # implicit IDs that are not usable keys or not lowercase
        "02" * 32,  # off the ed25519 curve: the chain would create an account nobody can sign for
        "98793CD91A3F870FB126F66285808C7E094AFCFC4EDA8A970F6648CDF0DBD6DE",
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",  # EIP-55 EVM address: upper case is not an ID
        "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",  # Solana
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",  # TRON
        TON_BOUNCEABLE,
        TON_RAW,
    ],
)
def test_near_refuses_invalid_ids_testnet_and_other_networks(address: str) -> None:
    _refused("near", address)


def test_near_off_curve_vector_is_really_off_the_curve() -> None:
    assert Ed25519PublicKey.IsValidBytes(bytes.fromhex("02" * 32)) is False


# --- Every code ---------------------------------------------------------------------------------------

VALID_BY_CODE = {
    "btc": "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa",
    "eth": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "usdterc20": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "usdc": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "bnb": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "trx": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    "trc20usdt": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    "sol": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    "ton": TON_BOUNCEABLE,
    "ltc": "LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA",
    "bch": "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a",
    "near": "alice.near",
}


def test_every_payment_code_has_a_valid_vector_here() -> None:
    assert sorted(VALID_BY_CODE) == sorted(ALL_CODES)


@pytest.mark.parametrize(("code", "address"), VALID_BY_CODE.items())
def test_surrounding_whitespace_is_stripped_from_the_stored_form(code: str, address: str) -> None:
    result = validate_address(code, f" \t{address}\r\n")

    assert result == address


@pytest.mark.parametrize(("code", "address"), VALID_BY_CODE.items())
def test_inner_whitespace_and_non_ascii_lookalikes_are_refused(code: str, address: str) -> None:
    middle = len(address) // 2

    _refused(code, f"{address[:middle]} {address[middle:]}")
    _refused(code, f"{address[:middle]}\u200b{address[middle:]}")  # zero-width space
    _refused(code, address[:-1] + "\u0430")  # Cyrillic small a


@pytest.mark.parametrize("code", ALL_CODES)
@pytest.mark.parametrize("address", ["", "   ", "\n", "x" * 129, "1" * 500])
def test_empty_blank_and_overlong_input_is_refused(code: str, address: str) -> None:
    _refused(code, address)


@pytest.mark.parametrize("code", ALL_CODES)
@pytest.mark.parametrize("address", [None, 0, 1.5, b"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", ["x"], {"a": 1}])
def test_non_string_input_is_refused_not_crashed(code: str, address: object) -> None:
    _refused(code, address)  # type: ignore[arg-type]


def test_code_is_matched_case_insensitively_and_named_in_lowercase() -> None:
    assert (
        validate_address(" BTC ", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa")
        == "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"
    )
    with pytest.raises(InvalidAddress, match=r"^not a valid trc20usdt address$"):
        validate_address("TRC20USDT", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")


@pytest.mark.parametrize("code", ["doge", "usdt", "", "BTC-TEST", None, 5])
def test_unknown_code_raises_unsupported_asset_from_both_functions(code: object) -> None:
    with pytest.raises(UnsupportedAsset):
        validate_address(code, "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa")  # type: ignore[arg-type]
    with pytest.raises(UnsupportedAsset):
        is_valid_address(code, "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa")  # type: ignore[arg-type]


def test_invalid_address_is_a_value_error_with_the_published_code() -> None:
    with pytest.raises(ValueError) as excinfo:
        validate_address("btc", "nope")

    assert isinstance(excinfo.value, InvalidAddress)
    assert excinfo.value.code == "invalid_address"


@settings(max_examples=300, deadline=None)
@given(code=st.sampled_from(ALL_CODES), text=st.text(max_size=140))
def test_arbitrary_text_is_either_accepted_unchanged_in_meaning_or_refused(code: str, text: str) -> None:
    try:
        result = validate_address(code, text)
    except InvalidAddress as exc:
        assert str(exc) == f"not a valid {code} address"
    else:
        assert validate_address(code, result) == result  # the stored form is itself valid and stable


@pytest.mark.parametrize(
    ("code", "forms"),
    [
        (
            "eth",
            [
                "0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
                "0x9858effd232b4033e47d90003d41ec34ecaeda94",
                " 0x9858EFFD232B4033E47D90003D41EC34ECAEDA94 ",
            ],
        ),
        (
            "ton",
            [
                "UQAzWZa6nM5mJev91wGc7VCSfBoIsYRqKJpV78N8Add9-RKY",
                "0:335996ba9cce6625ebfdd7019ced50927c1a08b1846a289a55efc37c01d77df9",
            ],
        ),
        (
            "bch",
            [
                "bitcoincash:qqyx49mu0kkn9ftfj6hje6g2wfer34yfnq5tahq3q6",
                "qqyx49mu0kkn9ftfj6hje6g2wfer34yfnq5tahq3q6",
            ],
        ),
    ],
)
def test_route_key_gives_every_spelling_of_an_address_one_key(code, forms):
    from chains.addresses import route_key

    keys = {route_key(code, form) for form in forms}

    assert len(keys) == 1


def test_route_key_keeps_invalid_text_as_given():
    from chains.addresses import route_key

    assert route_key("btc", " not-an-address ") == "not-an-address"
