"""btc, ltc and bch on a test network: addresses derived and validated for the node's network only."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from chains.addresses import InvalidAddress, validate_address
from chains.derivation import derive_address, development_xpub


def _on(settings, code: str, net: str) -> None:
    settings.CHAIN_NODES = {code: {"url": "http://user:pass@127.0.0.1:1", "network": net}}


@pytest.mark.parametrize(
    ("code", "net", "prefix"),
    [
        ("btc", "testnet", "tb1q"),
        ("btc", "regtest", "bcrt1q"),
        ("ltc", "testnet", "tltc1q"),
        ("ltc", "regtest", "rltc1q"),
        ("bch", "testnet", "bchtest:q"),
        ("bch", "regtest", "bchreg:q"),
    ],
)
def test_a_test_network_derives_its_own_encoding_from_a_tpub(settings, code, net, prefix):
    _on(settings, code, net)
    address, tag = derive_address(code, 0)
    assert address.startswith(prefix) and tag is None
    assert development_xpub(code).startswith("tpub")
    assert validate_address(code, address) == address


def test_the_bip84_testnet_vector(settings):
    # BIP-84's published test vector: the first receiving address of m/84'/1'/0' of the test mnemonic.
    _on(settings, "btc", "testnet")
    assert derive_address("btc", 0) == ("tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl", None)


def test_each_network_takes_only_its_own_account_keys(settings):
    mainnet_zpub = development_xpub("ltc")
    _on(settings, "ltc", "regtest")
    testnet_tpub = development_xpub("ltc")

    settings.CHAIN_XPUBS = {"ltc": mainnet_zpub}
    with pytest.raises(
        ImproperlyConfigured, match=r"must be a regtest tpub or vpub \(the ltc node's network\)"
    ):
        derive_address("ltc", 0)
    settings.CHAIN_NODES = {}
    settings.CHAIN_XPUBS = {"ltc": testnet_tpub}
    with pytest.raises(ImproperlyConfigured, match="must be a mainnet zpub or Ltub or xpub"):
        derive_address("ltc", 0)


@pytest.mark.parametrize(
    ("code", "net", "good", "mainnet"),
    [
        (
            "btc",
            "regtest",
            "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080",
            "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
        ),
        ("btc", "testnet", "mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2"),
        (
            "ltc",
            "regtest",
            "rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7k693xs3",
            "LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA",
        ),
        (
            "bch",
            "regtest",
            "bchreg:qr95sy3j9xwd2ap32xkykttr4cvcu7as4y3w7lzdc7",
            "bitcoincash:qr95sy3j9xwd2ap32xkykttr4cvcu7as4y0qverfuy",
        ),
    ],
)
def test_a_test_network_refuses_mainnet_addresses_and_says_which_network(settings, code, net, good, mainnet):
    _on(settings, code, net)
    assert validate_address(code, good)
    with pytest.raises(InvalidAddress, match=f"not a valid {code} {net} address"):
        validate_address(code, mainnet)


def test_mainnet_refuses_test_network_addresses(settings):
    with pytest.raises(InvalidAddress, match="not a valid ltc address"):
        validate_address("ltc", "rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7k693xs3")


def test_a_remembered_valid_address_is_still_checked_against_the_network_of_the_moment(settings):
    """validate_address remembers valid addresses (chains.addresses._valid_form): per network, so an address
    accepted on mainnet is refused once the node is on regtest, and accepted again back on mainnet."""
    mainnet = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
    assert validate_address("btc", mainnet) == mainnet
    assert validate_address("btc", mainnet.upper()) == mainnet  # the stored form, from the memory too
    _on(settings, "btc", "regtest")
    with pytest.raises(InvalidAddress, match="not a valid btc regtest address"):
        validate_address("btc", mainnet)
    settings.CHAIN_NODES = {}
    assert validate_address("btc", mainnet) == mainnet
