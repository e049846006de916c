"""A stuck payout replaced with a higher fee (RBF) on a litecoind that relays replacements."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chains.models import ChainTx
from chains.tests.test_bitcoincore_pipeline import _confirm, _events, _stuck_payout, ltc, miner  # noqa: F401
from tests.nodes import litecoind_regtest
from withdrawals import payouts

pytestmark = pytest.mark.litecoind


@pytest.fixture(scope="module")
def node():
    with litecoind_regtest("-mempoolreplacement=1") as running:
        yield running


def test_a_stuck_payout_is_replaced_and_the_replacement_pays_once(ltc, settings):  # noqa: F811
    withdrawal, receiver, original = _stuck_payout(ltc, settings)

    payouts.payout_monitor("ltc")  # unconfirmed past the limit: replaced

    bump = ChainTx.objects.get(replaces=original)
    assert bump.kind == "bump" and bump.fee > original.fee
    withdrawal.refresh_from_db()
    assert withdrawal.txid == bump.txid
    assert [e["txHash"] for e in _events("withdrawal", withdrawal.uid)] == ["", original.txid, bump.txid]
    mempool = ltc.node.rpc.call("getrawmempool")
    assert bump.txid in mempool and original.txid not in mempool

    _confirm(ltc, withdrawal, original, bump)
    assert (withdrawal.status, bump.status, original.status) == ("done", "confirmed", "replaced")
    assert ltc.miner.wallet.call("getreceivedbyaddress", receiver, 1) == Decimal("0.01")
