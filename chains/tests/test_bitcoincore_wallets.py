"""The deposit wallet Kassa creates, and how it imports addresses, by what the node can make: a descriptor
wallet on Bitcoin Core (importdescriptors), a legacy one where descriptors are not built in (Debian's
litecoind, also run for real in test_bitcoincore_pipeline.py), Bitcoin Cash Node's three-argument
createwallet. Recorded answers, written from Bitcoin Core's RPC help (createwallet, getdescriptorinfo,
importdescriptors)."""

from __future__ import annotations

import pytest

from chains.backend import get_backend
from chains.bitcoincore.backend import descriptor_key
from chains.bitcoincore.rpc import RpcError
from chains.derivation import development_xpub
from chains.tests.test_bitcoincore_bch import URL, RecordedNode

pytestmark = pytest.mark.django_db

NOT_FOUND = RpcError("loadwallet", -18, "Wallet file verification failed. Failed to load database path")


@pytest.fixture
def on_node(settings):
    def install(code: str, answers: dict) -> RecordedNode:
        settings.CHAIN_BACKENDS = {code: "bitcoincore"}
        settings.CHAIN_NODES = {code: {"url": URL, "network": "regtest"}}
        recorded = RecordedNode(answers)
        get_backend(code)._clients[URL] = recorded
        return recorded

    return install


def _descriptor(params):
    return {"descriptor": f"{params[0]}#checksum", "isrange": True}


def test_a_bitcoin_core_node_gets_a_descriptor_wallet_and_imports_a_ranged_descriptor(on_node):
    recorded = on_node(
        "btc",
        {
            "listwallets": [],
            "loadwallet": [NOT_FOUND],
            "createwallet": {"name": "kassa-deposits", "warning": ""},
            "getdescriptorinfo": lambda desc: _descriptor([desc]),
            "getwalletinfo": {"descriptors": True},
            "importdescriptors": lambda requests: [{"success": True} for _ in requests],
        },
    )

    assert get_backend("btc").ensure_watched("btc", 1000) == 1000

    creates = [params for method, params in recorded.calls if method == "createwallet"]
    assert creates == [("kassa-deposits", True, True, "", False, True, True)]  # descriptors, load on start
    ((requests,),) = [params for method, params in recorded.calls if method == "importdescriptors"]
    key = descriptor_key(development_xpub("btc"), "btc")
    assert key.startswith("tpub")
    assert requests == [
        {"desc": f"wpkh({key}/0/*)#checksum", "range": [0, 1000], "timestamp": "now", "active": False}
    ]
    assert "importmulti" not in [method for method, _ in recorded.calls]


def test_a_node_built_without_descriptor_wallets_gets_a_legacy_one_and_importmulti(on_node):
    recorded = on_node(
        "ltc",
        {
            "listwallets": [],
            "loadwallet": [NOT_FOUND],
            "createwallet": [
                RpcError(
                    "createwallet", -4, "Compiled without sqlite support (required for descriptor wallets)"
                ),
                {"name": "kassa-deposits", "warning": ""},
            ],
            "getdescriptorinfo": lambda desc: _descriptor([desc]),
            "getwalletinfo": {"descriptors": False},
            "importmulti": lambda requests, options: [{"success": True} for _ in requests],
        },
    )

    get_backend("ltc").ensure_watched("ltc", 10)

    creates = [params[5] for method, params in recorded.calls if method == "createwallet"]
    assert creates == [True, False]  # descriptors asked for, then a legacy wallet
    ((requests, options),) = [params for method, params in recorded.calls if method == "importmulti"]
    assert requests[0]["range"] == [0, 10] and requests[0]["watchonly"] is True
    assert options == {"rescan": False}


def test_bitcoin_cash_node_creates_with_three_arguments(on_node):
    recorded = on_node(
        "bch",
        {
            "listwallets": [],
            "loadwallet": [NOT_FOUND],
            "createwallet": {"name": "kassa-deposits", "warning": ""},
            "importmulti": lambda requests, options: [{"success": True} for _ in requests],
        },
    )

    get_backend("bch").ensure_watched("bch", 0)

    assert [params for method, params in recorded.calls if method == "createwallet"] == [
        ("kassa-deposits", True, True)
    ]
