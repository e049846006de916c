"""`manage.py chain status` and `manage.py chain rescan` on the sandbox chain."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from alerts.services import alert_raise
from chains.models import ChainCursor
from chains.scanning import chain_scan
from payments.models import SandboxBlock
from tests.chain import fund, mine
from tests.factories import CompanyFactory, UserFactory, WithdrawalFactory


def _run(*args: str) -> str:
    out = StringIO()
    call_command("chain", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_status_shows_tip_cursor_lag_pending_payouts_and_alerts():
    mine("btc", 5)  # mined and scanned
    # Two blocks the scanner has not looked at yet (the simulator's own mining scans at once).
    SandboxBlock.objects.bulk_create([SandboxBlock(code="btc", height=6), SandboxBlock(code="btc", height=7)])
    company = CompanyFactory()
    fund(company, "btc", "1")
    WithdrawalFactory(company=company, asset="btc", amount="0.25", funded=False)
    alert_raise(kind="payout_wallet_short", key="btc", message="btc: 1 withdrawal(s) waiting.")
    alert_raise(kind="node_down", key="btcx", message="another code's")

    (row,) = [json.loads(line) for line in _run("status", "--code", "btc", "--json").splitlines()]

    assert row["code"] == "btc" and row["backend"] == "sandbox"
    assert (row["nodeTip"], row["cursor"], row["lag"]) == (7, 5, 2)
    assert row["pendingPayouts"] == "0.25"
    assert row["payoutWallet"] is None  # the sandbox has no wallet to be short of
    assert [alert["kind"] for alert in row["alerts"]] == ["payout_wallet_short"]
    text = _run("status", "--code", "btc")
    assert "tip 7" in text and "lag 2" in text and "ALERT payout_wallet_short btc" in text


@pytest.mark.django_db
def test_status_lists_every_offered_code_by_default():
    codes = [line.split()[0] for line in _run("status").splitlines() if not line.startswith(" ")]
    assert {"btc", "ltc", "eth", "ton"} <= set(codes)


@pytest.mark.django_db
def test_rescan_sets_the_cursor_back_and_refuses_heights_the_node_does_not_have():
    mine("ltc", 4)
    chain_scan("ltc")

    out = _run("rescan", "--code", "ltc", "--from-height", "1")

    assert "after block 1" in out
    assert ChainCursor.objects.get(code="ltc").cursor == {"height": 1}
    with pytest.raises(CommandError, match="above the node's tip 4"):
        _run("rescan", "--code", "ltc", "--from-height", "9")
    with pytest.raises(CommandError, match="not a supported asset"):
        _run("rescan", "--code", "nope", "--from-height", "1")


@pytest.mark.django_db
def test_the_status_page_is_for_staff_only(client):
    alert_raise(kind="node_down", key="ltc", message="ltc node cannot be reached: refused")
    merchant = UserFactory()
    client.force_login(merchant)
    assert client.get("/dashboard/status/").status_code == 404
    staff = UserFactory(is_staff=True)
    client.force_login(staff)

    page = client.get("/dashboard/status/")

    assert page.status_code == 200
    text = page.content.decode()
    assert "Chain status" in text and "ltc node cannot be reached" in text
    assert page.headers["Cache-Control"].startswith("max-age=0")
