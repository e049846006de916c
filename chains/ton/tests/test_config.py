"""The `ton` entry of CHAIN_NODES: read exactly, each mistake refused with the key to fix."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from chains.ton.config import TonConfig, ton_config

URL = "https://toncenter.com/api/v2"


def test_no_entry_is_none(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {}
    assert ton_config() is None


def test_a_good_entry_is_read_exactly(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {
        "ton": {"url": URL + "/", "api_key": " k3y ", "payout_limit": "500.000000001", "daily_limit": 2000}
    }
    assert ton_config() == TonConfig(URL, "k3y", Decimal("500.000000001"), Decimal("2000"))
    settings.CHAIN_NODES = {"ton": {"url": "http://127.0.0.1:8081/api/v2"}}
    assert ton_config() == TonConfig("http://127.0.0.1:8081/api/v2", None, None, None)
    settings.CHAIN_NODES = {"ton": {"url": URL, "network": "private"}}
    assert ton_config() == TonConfig(URL, None, None, None, network="private")


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ("https://toncenter.com/api/v2", "CHAIN_NODES['ton'] is a JSON object"),
        ({}, "CHAIN_NODES['ton'].url"),
        ({"url": "toncenter.com/api/v2"}, "CHAIN_NODES['ton'].url"),
        ({"url": "https://toncenter.com/api/v3"}, "CHAIN_NODES['ton'].url"),
        ({"url": URL, "apikey": "x"}, "unknown keys ['apikey']"),
        ({"url": URL, "api_key": ""}, "CHAIN_NODES['ton'].api_key"),
        ({"url": URL, "api_key": 5}, "CHAIN_NODES['ton'].api_key"),
        ({"url": URL, "payout_limit": "0"}, "CHAIN_NODES['ton'].payout_limit"),
        ({"url": URL, "payout_limit": "1.0000000001"}, "CHAIN_NODES['ton'].payout_limit"),
        ({"url": URL, "daily_limit": True}, "CHAIN_NODES['ton'].daily_limit"),
        ({"url": URL, "payout_limit": "10", "daily_limit": "5"}, "payout_limit is at most its daily_limit"),
        ({"url": URL, "network": "testnet"}, "CHAIN_NODES['ton'].network is one of mainnet, private"),
    ],
)
def test_mistakes_are_refused_with_the_key(settings, entry, key) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {"ton": entry}
    with pytest.raises(ImproperlyConfigured) as refused:
        ton_config()
    assert key in str(refused.value)


def test_the_api_key_is_never_echoed(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_NODES = {"ton": {"url": URL, "api_key": ["sekret-key"]}}
    with pytest.raises(ImproperlyConfigured) as refused:
        ton_config()
    assert "sekret" not in str(refused.value)
