"""CHAIN_NODES entries of EVM codes: each mistake refused with the key to fix; nothing guessed."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from chains.evm.config import chain_codes, evm_config, evm_configs

URL = "http://127.0.0.1:8545"
TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3"


def test_a_good_configuration_is_read_exactly(settings):
    settings.CHAIN_NODES = {
        "eth": {"url": URL, "chain_id": 1, "fee_cap_gwei": "150.5", "payout_limit": 2},
        "usdterc20": {
            "url": URL,
            "chain_id": 1,
            "contract": TOKEN,
            "decimals": 6,
            "sweep_min": Decimal("0.1"),
        },
        "bnb": {"url": "http://127.0.0.1:8546", "chain_id": 56},
    }
    eth, usdt = evm_config("eth"), evm_config("usdterc20")
    assert (eth.contract, eth.decimals, eth.fee_cap_wei, eth.payout_limit) == (None, 18, 150_500_000_000, 2)
    assert (usdt.contract, usdt.decimals, usdt.sweep_min, usdt.daily_limit) == (
        TOKEN.lower(),
        6,
        Decimal("0.1"),
        None,
    )
    assert (usdt.topup_cap, usdt.topup_daily_limit) == (Decimal("0.01"), Decimal("0.2"))  # 20 top-ups
    assert chain_codes("evm:1") == ["eth", "usdterc20"]  # the native coin leads the shared scanner
    assert chain_codes("evm:56") == ["bnb"]


@pytest.mark.parametrize(
    ("nodes", "says"),
    [
        ({"eth": {"url": URL}}, "chain_id is a whole number"),
        ({"eth": {"url": URL, "chain_id": "1"}}, "chain_id is a whole number"),
        ({"eth": {"url": "ws://x", "chain_id": 1}}, "url is the node's http(s)://"),
        ({"eth": {"url": URL, "chain_id": 1, "contract": TOKEN}}, "native coin"),
        ({"usdc": {"url": URL, "chain_id": 1, "decimals": 6}}, "contract is the token's"),
        (
            {"usdc": {"url": URL, "chain_id": 1, "contract": TOKEN, "decimals": 2}},
            "decimals is a whole number",
        ),
        ({"eth": {"url": URL, "chain_id": 1, "fee_cap_gwei": "-1"}}, "fee_cap_gwei is a positive amount"),
        ({"eth": {"url": URL, "chain_id": 1, "fee_cap_gwei": True}}, "fee_cap_gwei is a positive amount"),
        ({"eth": {"url": URL, "chain_id": 1, "gas": 1}}, "unknown keys ['gas']"),
        (
            {"eth": {"url": URL, "chain_id": 1, "topup_cap": "0.05", "topup_daily_limit": "0.01"}},
            "topup_daily_limit is at least topup_cap (0.05)",
        ),
        (
            {
                "eth": {"url": URL, "chain_id": 1},
                "usdc": {"url": "http://other:8545", "chain_id": 1, "contract": TOKEN, "decimals": 6},
            },
            "share one node",
        ),
        ({"eth": {"url": URL, "chain_id": 1}, "bnb": {"url": URL, "chain_id": 1}}, "both the native coin"),
    ],
)
def test_each_mistake_is_refused_with_what_to_fix(settings, nodes, says):
    settings.CHAIN_NODES = nodes
    with pytest.raises(ImproperlyConfigured, match=re.escape(says)):
        evm_configs()
