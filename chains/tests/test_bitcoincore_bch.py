"""Bitcoin Cash Node's RPC differences, against answers written down from its source and documentation
(src/rpc/mining.cpp: `estimatefee` takes no argument and answers -1 without an estimate; src/wallet/
rpcdump.cpp: `importmulti` takes no `desc`). No BCH node runs here; these are hand-made recorded answers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from chains.backend import get_backend
from chains.base import FeeQuote
from chains.bitcoincore.rpc import RpcError
from chains.models import WatchRange

URL = "http://kassa:secret@127.0.0.1:18443"


class RecordedNode:
    """Answers each method from `answers` (a list is served in order) and records every call."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers, self.calls = answers, []

    def wallet(self, name: str) -> RecordedNode:
        return self

    def call(self, method: str, *params: Any) -> Any:
        self.calls.append((method, params))
        answer = self.answers[method]
        if isinstance(answer, list) and answer and isinstance(answer[0], (Exception, dict, Decimal)):
            answer = answer.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer(*params) if callable(answer) else answer


@pytest.fixture
def bch(settings):
    settings.CHAIN_BACKENDS = {"bch": "bitcoincore"}
    settings.CHAIN_NODES = {"bch": {"url": URL, "network": "regtest", "fee_fallback": "0.00002"}}
    backend = get_backend("bch")

    def node(answers: dict[str, Any]) -> RecordedNode:
        recorded = RecordedNode(answers)
        backend._clients[URL] = recorded
        return recorded

    return backend, node


def test_estimatefee_without_arguments_and_the_fallback_when_it_has_none(bch):
    backend, node = bch
    recorded = node(
        {
            "estimatefee": [Decimal("0.00003"), Decimal(-1)],
            "getmempoolinfo": {"mempoolminfee": Decimal("0.00001")},
        }
    )

    estimated = backend.quote_fee("bch")
    fallback = backend.quote_fee("bch")

    assert (estimated.rate, estimated.source) == (Decimal("0.00003"), "estimatefee")
    assert (fallback.rate, fallback.source) == (Decimal("0.00002"), "fallback")
    assert [params for method, params in recorded.calls if method == "estimatefee"] == [(), ()]


@pytest.mark.django_db
def test_addresses_are_imported_one_by_one_and_only_the_new_ones(bch):
    backend, node = bch
    recorded = node(
        {
            "listwallets": ["kassa-deposits"],
            "importmulti": lambda requests, options: [{"success": True} for _ in requests],
        }
    )

    assert backend.ensure_watched("bch", 2) == 2
    WatchRange.objects.create(code="bch", watched_until=2)
    backend.ensure_watched("bch", 4)

    imports = [params for method, params in recorded.calls if method == "importmulti"]
    addresses = [[request["scriptPubKey"]["address"] for request in requests] for requests, _ in imports]
    assert [len(batch) for batch in addresses] == [3, 2]
    assert all(address.startswith("bchreg:q") for batch in addresses for address in batch)
    assert all(options == {"rescan": False} for _, options in imports)
    assert not [
        method for method, _ in recorded.calls if method in ("getdescriptorinfo", "importdescriptors")
    ]


@pytest.mark.django_db
def test_a_refused_import_is_an_error_not_a_silent_gap(bch):
    backend, node = bch
    node(
        {
            "listwallets": ["kassa-deposits"],
            "importmulti": lambda requests, options: [{"success": False, "error": {"message": "bad"}}],
        }
    )
    with pytest.raises(RpcError, match="bad"):
        backend.ensure_watched("bch", 0)


def test_a_stuck_payout_gets_a_child_as_bitcoin_cash_has_no_replacement(bch):
    """getmempoolentry of Bitcoin Cash Node names the size `size` (no segwit, no vsize)."""
    backend, node = bch
    parent = "aa" * 32
    recorded = node(
        {
            "getmempoolentry": {"size": 226, "fees": {"base": Decimal("0.00000226")}},  # 1 sat/B
            "listunspent": lambda minconf, maxconf: [
                {"txid": parent, "vout": 1, "amount": Decimal("0.5"), "spendable": True},
                {"txid": "bb" * 32, "vout": 0, "amount": Decimal("2"), "spendable": True},
            ],
            "getrawchangeaddress": "bchreg:qchange",
            # The node's fee for the child alone (191 B) at 0.00005 bch/kB.
            "walletcreatefundedpsbt": {"psbt": "dry", "fee": Decimal("0.00000955"), "changepos": -1},
            "createpsbt": "child-psbt",
            "walletprocesspsbt": {"psbt": "signed-psbt", "complete": True},
            "finalizepsbt": {"hex": "0200", "complete": True},
            "decoderawtransaction": {"txid": "cc" * 32},
        }
    )
    fee = FeeQuote(rate=Decimal("0.00005"), unit="bch/kvB", source="estimatefee")

    assert backend.bump("bch", parent, fee) is None
    child = backend.child("bch", parent, fee)

    # The parent lacks 0.00005 * 226 / 1000 - 0.00000226 = 0.00000904; the child pays that and its own.
    assert child is not None and child.txid == "cc" * 32
    assert child.fee == Decimal("0.00000955") + Decimal("0.00000904")
    (created,) = [params for method, params in recorded.calls if method == "createpsbt"]
    assert created == ([{"txid": parent, "vout": 1}], [{"bchreg:qchange": Decimal("0.5") - child.fee}], 0)
    assert "psbtbumpfee" not in [method for method, _ in recorded.calls]


def test_no_child_when_the_parent_already_pays_the_rate(bch):
    backend, node = bch
    node({"getmempoolentry": {"size": 200, "fees": {"base": Decimal("0.00002")}}})  # 0.0001 per kB

    assert backend.child("bch", "aa" * 32, FeeQuote(Decimal("0.00005"), "bch/kvB", "estimatefee")) is None
