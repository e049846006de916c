import base64
import logging
import re

import pytest
from bip_utils import (
    Bip32KeyNetVersions,
    Bip32KholawEd25519,
    Bip32Secp256k1,
    Bip32Slip10Ed25519,
    Bip39SeedGenerator,
    Bip44,
    Bip44Changes,
    Bip44Coins,
    Bip84,
    Bip84Coins,
    NearAddrEncoder,
    SolAddrEncoder,
    TonAddrEncoder,
    TonAddrVersions,
)
from bip_utils.base58 import Base58Decoder
from django.core.exceptions import ImproperlyConfigured
from hypothesis import given
from hypothesis import strategies as st
from pytoniq_core import Address

from chains import derivation
from chains.derivation import (
    DEVELOPMENT_MNEMONIC,
    DEVELOPMENT_TON_ADDRESS,
    MAX_INDEX,
    derive_address,
    development_xpub,
    ton_comment,
    ton_deposit_address,
    uses_development_key,
)
from core.assets import all_assets
from core.errors import UnsupportedAsset

SEED = Bip39SeedGenerator(DEVELOPMENT_MNEMONIC).Generate()
OTHER_SEED = bytes(range(64))

# BIP-84's test vectors (same mnemonic): the account zpub, its xpub form, receiving addresses 0 and 1.
BIP84_ZPUB = "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs"  # noqa: E501
BIP84_AS_XPUB = "xpub6CatWdiZiodmUeTDp8LT5or8nmbKNcuyvz7WyksVFkKB4RHwCD3XyuvPEbvqAQY3rAPshWcMLoP2fMFMKHPJ4ZeZXYVUhLv1VMrjPC7PW6V"  # noqa: E501
BIP84_ADDRESSES = ["bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu", "bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g"]

# Index 0 of the same mnemonic as published by wallets' test suites (MetaMask, Trezor, TronWeb).
KNOWN_FIRST_ADDRESSES = {
    "btc": "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu",
    "ltc": "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh",
    "bch": "bitcoincash:qqyx49mu0kkn9ftfj6hje6g2wfer34yfnq5tahq3q6",
    "eth": "0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
    "trx": "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH",
}

EVM_CODES = ["eth", "usdterc20", "usdc", "bnb"]
ALL_CODES = [asset.code for asset in all_assets()]
DERIVED_CODES = [code for code in ALL_CODES if code != "ton"]

_BASE58 = "[1-9A-HJ-NP-Za-km-z]"
FORMATS = {
    "btc": r"bc1q[02-9ac-hj-np-z]{38}",
    "ltc": r"ltc1q[02-9ac-hj-np-z]{38}",
    "bch": r"bitcoincash:q[02-9ac-hj-np-z]{41}",
    "eth": r"0x[0-9a-fA-F]{40}",
    "usdterc20": r"0x[0-9a-fA-F]{40}",
    "usdc": r"0x[0-9a-fA-F]{40}",
    "bnb": r"0x[0-9a-fA-F]{40}",
    "trx": rf"T{_BASE58}{{33}}",
    "trc20usdt": rf"T{_BASE58}{{33}}",
    "sol": rf"{_BASE58}{{32,44}}",
    "near": r"[0-9a-f]{64}",
    "ton": r"UQ[A-Za-z0-9_-]{46}",
}


def _wallet_address(code: str, index: int, seed: bytes = SEED) -> str:
    """What a wallet holding the seed derives with private keys, via bip-utils' own BIP-44/84 classes."""
    bip84 = {"btc": Bip84Coins.BITCOIN, "ltc": Bip84Coins.LITECOIN}
    bip44 = {"bch": Bip44Coins.BITCOIN_CASH, "eth": Bip44Coins.ETHEREUM, "trx": Bip44Coins.TRON}
    if code in bip84:
        account = Bip84.FromSeed(seed, bip84[code]).Purpose().Coin().Account(0)
    elif code in bip44:
        account = Bip44.FromSeed(seed, bip44[code]).Purpose().Coin().Account(0)
    else:
        coin, encoder = {"sol": (501, SolAddrEncoder), "near": (397, NearAddrEncoder)}[code]
        node = Bip32KholawEd25519.FromSeedAndPath(seed, f"m/44'/{coin}'/0'/0/{index}")
        return encoder.EncodeKey(node.PublicKey().RawCompressed().ToBytes()[1:])
    return account.Change(Bip44Changes.CHAIN_EXT).AddressIndex(index).PublicKey().ToAddress()


def _xpub(seed: bytes, path: str, versions: Bip32KeyNetVersions | None = None) -> str:
    return Bip32Secp256k1.FromSeedAndPath(seed, path, versions).PublicKey().ToExtended()


def _kholaw_xpub(seed: bytes, path: str) -> str:
    return Bip32KholawEd25519.FromSeedAndPath(seed, path).PublicKey().ToExtended()


@pytest.fixture(autouse=True)
def _no_configured_keys(settings):
    settings.CHAIN_XPUBS = {}
    settings.TON_DEPOSIT_ADDRESS = ""


# --- development keys and published vectors ---------------------------------------------------------------


def test_development_btc_addresses_are_the_bip84_vectors():
    addresses = [derive_address("btc", 0), derive_address("btc", 1)]

    assert addresses == [(BIP84_ADDRESSES[0], None), (BIP84_ADDRESSES[1], None)]


def test_development_btc_key_is_the_bip84_zpub():
    assert development_xpub("btc") == BIP84_ZPUB


@pytest.mark.parametrize("code", sorted(KNOWN_FIRST_ADDRESSES))
def test_development_address_zero_is_the_published_one(code):
    address, tag = derive_address(code, 0)

    assert address == KNOWN_FIRST_ADDRESSES[code]
    assert tag is None


@pytest.mark.parametrize("code", DERIVED_CODES)
@pytest.mark.parametrize("index", [0, 1, 7, 1000, MAX_INDEX])
def test_development_address_is_the_seed_holders_receiving_address(code, index):
    wallet_code = {"usdterc20": "eth", "usdc": "eth", "bnb": "eth", "trc20usdt": "trx"}.get(code, code)

    address, _ = derive_address(code, index)

    assert address == _wallet_address(wallet_code, index)


def test_development_xpub_of_ton_or_an_unknown_family_is_refused():
    for family in ("ton", "eth", "xyz"):
        with pytest.raises(ValueError, match="family"):
            development_xpub(family)


def test_development_ton_address_is_the_v4r2_wallet_of_the_development_mnemonic():
    key = Bip32Slip10Ed25519.FromSeedAndPath(SEED, "m/44'/607'/0'").PublicKey().RawCompressed().ToBytes()[1:]

    expected = TonAddrEncoder.EncodeKey(key, version=TonAddrVersions.V4, is_bounceable=False)
    parsed = Address(DEVELOPMENT_TON_ADDRESS)

    assert expected == DEVELOPMENT_TON_ADDRESS
    assert (parsed.wc, parsed.is_bounceable, parsed.is_test_only) == (0, False, False)
    assert derive_address("ton", 0) == (DEVELOPMENT_TON_ADDRESS, "00")


def test_falling_back_to_a_development_key_logs_a_warning(caplog):
    derivation._warn_development_key.cache_clear()

    with caplog.at_level(logging.WARNING, logger="chains.derivation"):
        derive_address("eth", 3)
        derive_address("bnb", 4)

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # once per family, not per address
    assert "evm" in warnings[0]
    assert "PUBLIC development key" in warnings[0]


def test_uses_development_key_tells_configured_families_apart(settings):
    settings.CHAIN_XPUBS = {"btc": BIP84_ZPUB}
    settings.TON_DEPOSIT_ADDRESS = DEVELOPMENT_TON_ADDRESS

    assert uses_development_key("btc") is False
    assert uses_development_key("evm") is True
    assert uses_development_key("ton") is False
    with pytest.raises(ValueError):
        uses_development_key("eth")


# --- shape of the derivation ------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ALL_CODES)
def test_same_index_gives_the_same_address(code):
    first = derive_address(code, 42)

    second = derive_address(code, 42)

    assert first == second


@pytest.mark.parametrize("code", ALL_CODES)
def test_distinct_indexes_give_distinct_deposit_targets(code):
    targets = {derive_address(code, index) for index in range(201)}

    assert len(targets) == 201


@pytest.mark.parametrize("code", ALL_CODES)
def test_addresses_have_the_chains_format(code):
    for index in (0, 1, 2**20, MAX_INDEX):
        address, _ = derive_address(code, index)

        assert re.fullmatch(FORMATS[code], address), address


def test_evm_codes_share_one_key():
    for index in (0, 5, 99):
        addresses = {derive_address(code, index)[0] for code in EVM_CODES}

        assert len(addresses) == 1


def test_evm_addresses_are_eip55_checksummed():
    address, _ = derive_address("eth", 11)

    assert address != address.lower()
    assert address == _wallet_address("eth", 11)  # bip-utils' encoder checksums


def test_sol_and_near_share_nothing():
    sol_key = Base58Decoder.Decode(derive_address("sol", 0)[0]).hex()

    assert sol_key != derive_address("near", 0)[0]


def test_ton_tag_is_the_decimal_index_and_its_check_digit_on_one_address():
    pairs = [derive_address("ton", index) for index in (0, 9, 10, 12345)]

    assert pairs == [(DEVELOPMENT_TON_ADDRESS, tag) for tag in ("00", "92", "101", "123459")]


def _typos(comment: str) -> set[str]:
    """Every comment one mistyped digit or one swap of two neighbours makes of `comment`."""
    typed = {comment[:i] + d + comment[i + 1 :] for i in range(len(comment)) for d in "0123456789"}
    swapped = {comment[:i] + comment[i + 1] + comment[i] + comment[i + 2 :] for i in range(len(comment) - 1)}
    return (typed | swapped) - {comment}


@given(st.integers(min_value=0, max_value=MAX_INDEX))
def test_no_single_typo_in_a_ton_comment_names_another_deposit(index):
    """A customer who mistypes one digit (or swaps two) of the comment must not pay someone else's invoice:
    the payment is unrouted instead."""
    for typo in _typos(ton_comment(index)):
        assert typo != ton_comment(int(typo[:-1]))


@pytest.mark.parametrize("index", [-1, MAX_INDEX + 1, True, 1.0, "1", None])
@pytest.mark.parametrize("code", ["btc", "sol", "ton"])
def test_an_index_outside_the_non_hardened_range_is_refused(code, index):
    with pytest.raises(ValueError, match="index"):
        derive_address(code, index)


def test_an_unknown_code_is_refused():
    with pytest.raises(UnsupportedAsset):
        derive_address("doge", 0)


def test_code_is_case_insensitive():
    assert derive_address("BTC", 0) == derive_address("btc", 0)


# --- configured keys --------------------------------------------------------------------------------------


def test_configured_bip84_zpub_gives_the_bip84_addresses(settings):
    settings.CHAIN_XPUBS = {"btc": BIP84_ZPUB}

    addresses = [derive_address("btc", 0)[0], derive_address("btc", 1)[0]]

    assert addresses == BIP84_ADDRESSES
    assert uses_development_key("btc") is False


def test_configured_key_in_xpub_form_gives_the_same_addresses(settings):
    settings.CHAIN_XPUBS = {"btc": BIP84_AS_XPUB}

    address, _ = derive_address("btc", 1)

    assert address == BIP84_ADDRESSES[1]


def test_configured_key_is_used_instead_of_the_development_one(settings):
    settings.CHAIN_XPUBS = {
        "evm": _xpub(OTHER_SEED, "m/44'/60'/0'"),
        "tron": _xpub(OTHER_SEED, "m/44'/195'/0'"),
        "sol": _kholaw_xpub(OTHER_SEED, "m/44'/501'/0'"),
        "near": _kholaw_xpub(OTHER_SEED, "m/44'/397'/0'"),
    }

    derived = {code: derive_address(code, 17)[0] for code in ("eth", "trx", "sol", "near")}

    assert derived == {code: _wallet_address(code, 17, OTHER_SEED) for code in derived}
    assert derived["eth"] != _wallet_address("eth", 17)


def test_configured_ltc_key_may_be_ltub(settings):
    ltub = Bip32KeyNetVersions(b"\x01\x9d\xa4\x62", b"\x01\x9d\x9c\xfe")
    settings.CHAIN_XPUBS = {"ltc": _xpub(SEED, "m/84'/2'/0'", ltub)}

    address, _ = derive_address("ltc", 0)

    assert address == KNOWN_FIRST_ADDRESSES["ltc"]


def test_configured_key_surrounded_by_whitespace_is_accepted(settings):
    settings.CHAIN_XPUBS = {"btc": f"  {BIP84_ZPUB}\n"}

    assert derive_address("btc", 0)[0] == BIP84_ADDRESSES[0]


def _bad_keys() -> list[tuple[str, object, str]]:
    ypub = Bip32KeyNetVersions(b"\x04\x9d\x7c\xb2", b"\x04\x9d\x78\x78")
    tpub = Bip32KeyNetVersions(b"\x04\x35\x87\xcf", b"\x04\x35\x83\x94")
    return [
        ("btc", "not a key", "base58check"),
        ("btc", BIP84_ZPUB[:-1] + ("t" if BIP84_ZPUB[-1] != "t" else "u"), "base58check"),
        ("btc", _xpub(SEED, "m/84'/0'/0'", ypub), "zpub or xpub"),
        ("evm", _xpub(SEED, "m/44'/1'/0'", tpub), "mainnet xpub"),
        ("btc", _kholaw_xpub(SEED, "m/44'/501'/0'"), "secp256k1"),
        ("sol", _xpub(SEED, "m/44'/501'/0'"), "Kholaw"),
        ("near", development_xpub("evm"), "Kholaw"),
        ("tron", 12345, "string"),
    ]


@pytest.mark.parametrize(("family", "key", "message"), _bad_keys())
def test_a_malformed_configured_key_is_improperly_configured(settings, family, key, message):
    settings.CHAIN_XPUBS = {family: key}
    code = {"evm": "eth", "tron": "trx"}.get(family, family)

    with pytest.raises(ImproperlyConfigured, match=rf"CHAIN_XPUBS\['{family}'\]") as excinfo:
        derive_address(code, 0)

    assert message in str(excinfo.value)


@pytest.mark.parametrize(
    ("family", "path", "bip32"),
    [("btc", "m/84'/0'/0'", Bip32Secp256k1), ("sol", "m/44'/501'/0'", Bip32KholawEd25519)],
)
def test_a_configured_private_key_is_refused_without_echoing_it(settings, family, path, bip32):
    private = bip32.FromSeedAndPath(SEED, path).PrivateKey().ToExtended()
    settings.CHAIN_XPUBS = {family: private}

    with pytest.raises(ImproperlyConfigured, match="never holds private keys") as excinfo:
        derive_address(family, 0)

    assert private not in str(excinfo.value)
    assert private[5:20] not in str(excinfo.value)


def test_an_unknown_family_in_chain_xpubs_is_refused(settings):
    settings.CHAIN_XPUBS = {"eth": development_xpub("evm")}

    with pytest.raises(ImproperlyConfigured, match=r"'eth'.*share 'evm'"):
        derive_address("btc", 0)


def test_chain_xpubs_must_be_a_dict(settings):
    settings.CHAIN_XPUBS = [BIP84_ZPUB]

    with pytest.raises(ImproperlyConfigured, match="must be a dict"):
        derive_address("btc", 0)


# --- TON_DEPOSIT_ADDRESS ----------------------------------------------------------------------------------

RAW_TON = "0:" + "ff" * 32
RAW_TON_ADDRESS = Address(RAW_TON)


def _ton_variant(*, bounceable: bool, url_safe: bool = True, testnet: bool = False) -> str:
    return RAW_TON_ADDRESS.to_str(is_bounceable=bounceable, is_url_safe=url_safe, is_test_only=testnet)


def test_configured_ton_address_and_the_index_tag_are_returned(settings):
    settings.TON_DEPOSIT_ADDRESS = _ton_variant(bounceable=False)

    assert derive_address("ton", 7) == (_ton_variant(bounceable=False), "76")
    assert uses_development_key("ton") is False


def test_configured_bounceable_ton_address_stays_bounceable(settings):
    settings.TON_DEPOSIT_ADDRESS = _ton_variant(bounceable=True)

    assert ton_deposit_address() == _ton_variant(bounceable=True)


def test_raw_ton_address_becomes_user_friendly_non_bounceable(settings):
    settings.TON_DEPOSIT_ADDRESS = RAW_TON

    assert ton_deposit_address() == _ton_variant(bounceable=False)


def test_standard_base64_ton_address_becomes_url_safe(settings):
    url_safe, standard = _ton_variant(bounceable=False), _ton_variant(bounceable=False, url_safe=False)
    assert url_safe != standard  # the fixed hash part makes the two alphabets differ
    settings.TON_DEPOSIT_ADDRESS = standard

    assert ton_deposit_address() == url_safe


def _masterchain_address() -> str:
    return Address("-1:" + "ff" * 32).to_str(is_bounceable=False)


def _bad_checksum_address() -> str:
    data = bytearray(base64.urlsafe_b64decode(_ton_variant(bounceable=False)))
    data[-1] ^= 0x01
    return base64.urlsafe_b64encode(bytes(data)).decode()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not an address", "not a TON address"),
        (_bad_checksum_address(), "checksum"),
        (_ton_variant(bounceable=False, testnet=True), "testnet"),
        (_masterchain_address(), "workchain 0"),
        ("-1:" + "ab" * 32, "not a TON address"),
        (DEVELOPMENT_TON_ADDRESS[:-1], "not a TON address"),
        (42, "must be a string"),
    ],
)
def test_a_malformed_ton_deposit_address_is_improperly_configured(settings, value, message):
    settings.TON_DEPOSIT_ADDRESS = value

    with pytest.raises(ImproperlyConfigured, match="TON_DEPOSIT_ADDRESS") as excinfo:
        derive_address("ton", 0)

    assert message in str(excinfo.value)


# --- the project's address validator ----------------------------------------------------------------------


@pytest.mark.parametrize("code", ALL_CODES)
def test_derived_addresses_pass_the_project_validator(code):
    from chains.addresses import validate_address  # lazy: the validator lives in its own module

    for index in (0, 1, 500, MAX_INDEX):
        address, _ = derive_address(code, index)

        assert validate_address(code, address) == address
