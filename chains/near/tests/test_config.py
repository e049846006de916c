"""The near entry of CHAIN_NODES and the hot key of CHAIN_XPUBS: read exactly, each mistake refused with the
key to fix, a pasted secret never echoed."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from chains.near import transaction
from chains.near.config import has_key_configured, hot_public_key, near_config, uses_development_key
from chains.near.keys import development_hot_public_key, hot_key, seed_of
from chains.near.units import from_yocto, to_yocto

URL = "http://127.0.0.1:3030"
OTHER = hot_key(seed_of("legal winner thank year wave sausage worth useful legal winner thank yellow"))[1]


def test_a_good_entry_is_read_exactly(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_XPUBS = {"near": OTHER.hex()}
    settings.CHAIN_NODES = {
        "near": {
            "url": URL,
            "api_key": " k3y ",
            "network": "testnet",
            "account": "shop.testnet",
            "sweep_min": "0.5",
            "payout_limit": 100,
            "daily_limit": "250.25",
        }
    }

    config = near_config()

    assert (config.url, config.api_key, config.network, config.account) == (
        URL,
        "k3y",
        "testnet",
        "shop.testnet",
    )
    assert config.hot_key == OTHER and has_key_configured() and not uses_development_key()
    assert (config.sweep_min, config.payout_limit, config.daily_limit) == (
        Decimal("0.5"),
        Decimal(100),
        Decimal("250.25"),
    )


def test_the_defaults_are_the_hot_keys_own_implicit_account(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_XPUBS = {}
    settings.CHAIN_NODES = {"near": {"url": URL}}

    config = near_config()

    assert config.account == transaction.implicit_account(development_hot_public_key())
    assert uses_development_key() and not has_key_configured()
    assert (config.network, config.sweep_min, config.payout_limit) == ("mainnet", Decimal("0.01"), None)


def test_the_hot_key_is_read_in_either_spelling(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_XPUBS = {"near": transaction.public_key_text(OTHER)}
    assert hot_public_key() == OTHER
    settings.CHAIN_XPUBS = {"near": OTHER.hex().upper()}
    assert hot_public_key() == OTHER


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ("http://x", r"CHAIN_NODES\['near'\] is a JSON object"),
        ({"url": "ws://x"}, r"\.url is the node's http\(s\):// JSON-RPC address"),
        ({"url": URL, "network": "betanet"}, r"\.network is one of mainnet, testnet, private"),
        ({"url": URL, "account": "Shop.near"}, r"\.account is a NEAR account id"),
        ({"url": URL, "account": "ab" * 32}, r"implicit account whose key is not"),
        ({"url": URL, "payout_limit": "0"}, r"\.payout_limit is a positive amount of NEAR"),
        ({"url": URL, "sweep_min": "0.0000000000000000001"}, r"\.sweep_min is NEAR to at most 18"),
        ({"url": URL, "seed": "x"}, r"unknown keys \['seed'\]"),
    ],
)
def test_mistakes_name_the_key(settings, entry, match) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_XPUBS = {}
    settings.CHAIN_NODES = {"near": entry}
    with pytest.raises(ImproperlyConfigured, match=match):
        near_config()


def test_the_sandboxs_extended_key_is_refused_on_the_near_backend(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_XPUBS = {"near": "xpub" + "1" * 100}
    settings.CHAIN_NODES = {"near": {"url": URL}}
    with pytest.raises(ImproperlyConfigured, match="extended key, which only the sandbox derives from"):
        near_config()
    assert not has_key_configured()


def test_a_pasted_private_key_is_never_echoed(settings) -> None:  # type: ignore[no-untyped-def]
    secret = (
        "ed25519:"
        + "3hoMW1HvnRLSFCLZnvPzWeoGwtdHzke34B2cTHM8rhcbG3TbuLKtShTv3DvyejnXKXKBiV7YPkLeqUHN1ghnqpFv"
    )
    settings.CHAIN_XPUBS = {"near": secret}
    with pytest.raises(ImproperlyConfigured) as refused:
        hot_public_key()
    assert "treat it as leaked" in str(refused.value) and secret[10:] not in str(refused.value)


def test_amounts_round_down_when_read_and_are_exact_when_sent() -> None:
    assert from_yocto(10**24 + 999_999) == Decimal("1.000000000000000000")  # finer than 18 places: down
    assert from_yocto(1_234_567_000_000) == Decimal("0.000000000001234567")
    assert to_yocto(Decimal("0.000000000001234567")) == 1_234_567_000_000
    with pytest.raises(ValueError, match="more than 24 decimal places"):
        to_yocto(Decimal("1e-25"))
    with pytest.raises(ValueError, match="0 to 2\\^128"):
        to_yocto(Decimal(-1))
