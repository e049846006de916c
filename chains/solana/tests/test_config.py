"""The CHAIN_NODES entry of sol: read exactly, each mistake refused with the key to fix, the API key never
echoed."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from chains.solana.config import solana_config, solana_configs

URL = "http://127.0.0.1:8899"


def test_a_good_entry_is_read_exactly(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {
        "sol": {
            "url": URL,
            "api_key": " k3y ",
            "payout_limit": "50.5",
            "daily_limit": 200,
            "priority_fee_cap": "0.000123456",
        }
    }

    config = solana_config("sol")

    assert (config.code, config.url, config.api_key) == ("sol", URL, "k3y")
    assert (config.payout_limit, config.daily_limit) == (Decimal("50.5"), Decimal(200))
    assert config.priority_fee_cap == Decimal("0.000123456") and config.priority_fee_cap_lamports == 123_456


def test_the_defaults(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {"sol": {"url": URL}}

    config = solana_config()

    assert (config.api_key, config.payout_limit, config.daily_limit) == (None, None, None)
    assert config.priority_fee_cap_lamports == 1_000_000  # 0.001 SOL


def test_other_families_are_not_read(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {"btc": {"url": "http://127.0.0.1:8332"}}

    assert solana_configs() == {}
    with pytest.raises(ImproperlyConfigured, match="no Solana node for sol"):
        solana_config()


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ("http://x", r"CHAIN_NODES\['sol'\] is a JSON object"),
        ({}, r"CHAIN_NODES\['sol'\]\.url is the node's http\(s\):// JSON-RPC address"),
        ({"url": "ws://127.0.0.1:8900"}, r"\.url is"),
        ({"url": URL, "network": "mainnet-beta"}, r"\.network is one of mainnet, devnet, testnet, private"),
        ({"url": URL, "api_key": ""}, r"\.api_key is text"),
        ({"url": URL, "api_key": 5}, r"\.api_key is text"),
        ({"url": URL, "payout_limit": "0"}, r"\.payout_limit is a positive amount of SOL"),
        ({"url": URL, "payout_limit": "-1"}, r"\.payout_limit is a positive amount"),
        ({"url": URL, "daily_limit": "ten"}, r"\.daily_limit is a positive amount"),
        ({"url": URL, "daily_limit": True}, r"\.daily_limit is a positive amount"),
        ({"url": URL, "payout_limit": "0.0000000001"}, r"\.payout_limit is SOL to the lamport"),
        ({"url": URL, "priority_fee_cap": "1e30"}, r"\.priority_fee_cap is more SOL than there can be"),
        ({"url": URL, "priority_fee_cap": "NaN"}, r"\.priority_fee_cap is a positive amount"),
    ],
)
def test_a_bad_entry_is_refused_with_the_key_to_fix(settings, entry: object, match: str) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {"sol": entry}

    with pytest.raises(ImproperlyConfigured, match=match):
        solana_configs()


def test_the_api_key_is_never_echoed(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {"sol": {"url": URL, "api_key": ["SECRET-KEY"]}}

    with pytest.raises(ImproperlyConfigured) as raised:
        solana_configs()

    assert "SECRET" not in str(raised.value)


def test_a_change_of_settings_is_read_again(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {"sol": {"url": URL}}
    assert solana_config().url == URL

    settings.CHAIN_NODES = {"sol": {"url": "https://rpc.example"}}

    assert solana_config().url == "https://rpc.example"
