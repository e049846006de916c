"""What a client and an operator see of trx and trc20usdt on the tron backend, against the TRON devnet: the
pay page's QR and amount, `chain status` (the node, its solidified block, the hot address with its TRX and
tokens), /readyz, the /metrics gauges EVM codes have, and the alerts (node down, the hot address without
TRX for fees, the resource account's energy low)."""

from __future__ import annotations

import io
import json
import re
import socket
import time
from collections.abc import Iterator
from decimal import Decimal
from html import unescape
from typing import Any

import pytest
import zxingcpp
from django.core.management import call_command
from PIL import Image
from prometheus_client.parser import text_string_to_metric_families

from alerts.models import Alert, AlertStatus
from chains import readiness
from chains.derivation import derive_internal_address
from chains.scanning import chain_scan
from chains.tron.signer import TronJournal, get_signer
from invoices.models import Invoice
from invoices.payuri import make_qr, payment_uri, qr_svg
from tests.chain import TronChain, fund
from tests.factories import CompanyFactory, InvoiceFactory, UserFactory
from tests.tron_devnet.fixtures import tron_devnet  # noqa: F401
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

HOT = derive_internal_address("tron", 0)
SOLID = 19  # the devnet solidifies a block 19 blocks behind the head
SUN = 1_000_000
METRICS_TOKEN = "metrics-token-for-tron-tests-0123456789"


@pytest.fixture
def chain(settings, db, tron_devnet, monkeypatch) -> Iterator[TronChain]:  # noqa: F811
    running = TronChain(tron_devnet)
    monkeypatch.setattr(get_signer(), "journal", TronJournal())  # each test's withdrawals start at 001-1
    settings.CHAIN_BACKENDS = {"trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = running.nodes()
    # The signer checks expirations by its own clock: the devnet's (from 2026-01-01) is brought to ours.
    behind = int(time.time() * 1000) - int(
        tron_devnet.post("wallet/getnowblock")["block_header"]["raw_data"]["timestamp"]
    )
    tron_devnet.mine(skip_seconds=max(behind, 0) // 1000 + 1)
    running.scan()  # the cursor starts at the tip
    readiness.forget()
    yield running
    readiness.forget()


def _head(chain: TronChain) -> int:
    return int(chain.devnet.post("wallet/getnowblock")["block_header"]["raw_data"]["number"])


def _status(*codes: str, json_lines: bool = True) -> list[Any]:
    out = io.StringIO()
    args = [arg for code in codes for arg in ("--code", code)]
    call_command("chain", "status", *args, *(["--json"] if json_lines else []), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()] if json_lines else [out.getvalue()]


def _down(settings, chain: TronChain) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]  # nothing listens there once the socket is closed
    nodes = chain.nodes()
    for entry in nodes.values():
        entry["url"] = f"http://127.0.0.1:{closed}"
    settings.CHAIN_NODES = nodes


# --- the pay page ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["trx", "trc20usdt"])
def test_the_pay_page_shows_the_tron_address_in_the_qr_and_the_exact_amount_that_pays_it(chain, client, code):
    invoice = InvoiceFactory(code=code, total="12.34")
    address = invoice.deposit_address.address

    html = client.get(f"/{invoice.pk}").content.decode()

    shown = unescape(re.search(r'id="amount">([^<]+)<', html).group(1)).strip()
    assert Decimal(shown) == invoice.amount_due and Decimal(shown).as_tuple().exponent >= -6  # whole sun
    assert payment_uri(code, address=address, amount=invoice.amount_due) == address
    assert qr_svg(address, title="QR code for this payment") in html
    assert "The QR code holds the address only: enter the amount yourself." in html
    assert 'class="wallet-link"' not in html  # no "Open in wallet app": the QR carries no amount
    pay = chain.pay_token if code == "trc20usdt" else chain.pay
    pay(address, shown)  # what the client types, as the page shows it
    chain.scan(SOLID + 1)
    invoice.refresh_from_db()
    assert (invoice.status, invoice.paid_amount) == (Invoice.Status.DONE, invoice.amount_due)


def test_the_tron_qr_decodes_to_the_bare_address(chain):
    invoice = InvoiceFactory(code="trc20usdt", total="5")
    address = invoice.deposit_address.address
    uri = payment_uri("trc20usdt", address=address, amount=invoice.amount_due)
    png = io.BytesIO()
    make_qr(uri).save(png, kind="png", scale=6)
    png.seek(0)

    assert [found.text for found in zxingcpp.read_barcodes(Image.open(png))] == [address]


# --- chain status, /readyz, /metrics -----------------------------------------------------------------------


def test_chain_status_shows_the_node_its_solidified_block_and_the_hot_address_with_trx_and_tokens(
    chain, client
):
    chain.devnet.fund(HOT, sun=50 * SUN, token=30 * SUN)
    chain.scan(SOLID + 5)
    head = _head(chain)
    client.force_login(UserFactory(is_staff=True))

    trx, usdt = _status("trx", "trc20usdt")
    [text] = _status("trx", "trc20usdt", json_lines=False)
    page = client.get("/dashboard/status/").content.decode()

    for row in (trx, usdt):
        assert (row["backend"], row["nodeTip"], row["nodeFinal"], row["nodeError"]) == (
            "tron",
            head,
            head - SOLID,
            None,
        )
        assert (row["cursor"], row["lag"], row["hotAddress"]) == (head, 0, HOT)
    assert (trx["payoutWallet"], trx["gasTank"], trx["gasPaid"]) == ("50", "50", "0")
    assert (usdt["payoutWallet"], usdt["gasTank"], usdt["gasPaid"]) == ("30", "50", "0")
    assert f"tip {head}  final {head - SOLID}" in text
    assert "payout wallet 30 vs pending 0  gas tank 50" in text
    assert f"hot address {HOT}" in text
    assert page.count(f"final {head - SOLID}</span>") == 2  # trx and trc20usdt; the sandbox codes have none
    assert f"Hot address of trc20usdt, trx: <code>{HOT}</code>" in page


def test_a_tron_node_that_cannot_be_reached_pauses_its_codes_alerts_and_fails_readyz(chain, client, settings):
    ready = client.get("/readyz").json()["nodes"]
    _down(settings, chain)

    scanned = chain_scan("trx")
    readiness.forget()
    down = client.get("/readyz")
    trx, usdt = _status("trx", "trc20usdt")

    assert ready == {"trx": "ok", "trc20usdt": "ok"}
    assert scanned == 0
    assert Alert.objects.get(kind="node_down", key="trx", status=AlertStatus.OPEN)
    assert down.status_code == 503
    assert down.json()["nodes"] == dict.fromkeys(["trx", "trc20usdt"], "error: TronNodeUnavailable")
    assert {"nodes.trx", "nodes.trc20usdt"} <= set(down.json()["failed"])
    assert trx["nodeTip"] is None and trx["nodeError"] and trx["paused"]
    assert usdt["nodeTip"] is None and usdt["nodeError"]


def test_metrics_export_the_tron_codes_wallet_gas_tank_and_scan_gauges(chain, client, settings):
    settings.METRICS_TOKEN = METRICS_TOKEN
    chain.devnet.fund(HOT, sun=50 * SUN, token=30 * SUN)
    chain.scan(1)

    payouts.payout_monitor_all()  # beat's run: it reads every payout wallet for /metrics

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }
    for code, balance in (("trx", 50), ("trc20usdt", 30)):
        assert samples[("kassa_payout_wallet_balance", (("code", code),))] == balance
        assert samples[("kassa_payout_wallet_gas", (("code", code),))] == 50  # the hot address's TRX
        assert ("kassa_payout_wallet_read_age_seconds", (("code", code),)) in samples
    assert samples[("kassa_chain_tip_height", (("code", "trx"),))] == _head(chain)  # trx leads the scan
    assert samples[("kassa_chain_scan_lag_blocks", (("code", "trx"),))] == 0
    assert samples[("kassa_chain_paused", (("code", "trx"),))] == 0


# --- alerts ------------------------------------------------------------------------------------------------


def test_a_hot_address_without_trx_for_the_fee_holds_token_payouts_with_the_alert_until_funded(chain):
    chain.devnet.fund(HOT, token=100 * SUN)  # tokens, and no TRX for the energy and bandwidth
    chain.mine()
    company = CompanyFactory()
    fund(company, "trc20usdt", "100")
    bob = chain.devnet.accounts["bob"].address
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="trc20usdt", amount=Decimal("20"), to=bob, tag="")]
    )

    payouts.payout_plan("trc20usdt")

    withdrawal.refresh_from_db()
    short = Alert.objects.get(kind="payout_wallet_short", key="trc20usdt", status=AlertStatus.OPEN)
    assert withdrawal.status == Withdrawal.Status.PROCESSING
    assert re.fullmatch(
        rf"The payout wallet is short: {HOT} holds 0\.000000 of TRX for the network fee, \d+\.\d{{6}} needed",
        withdrawal.blocked_reason,
    )
    chain.devnet.fund(HOT, sun=100 * SUN)
    chain.mine()
    payouts.payout_plan("trc20usdt")
    withdrawal.refresh_from_db()
    assert withdrawal.blocked_reason == ""
    assert Alert.objects.get(pk=short.pk).status == AlertStatus.RESOLVED


def test_the_resource_account_with_less_energy_than_a_token_transfer_is_alerted_until_it_stakes(
    chain, settings
):
    resource = derive_internal_address("tron", 1)  # the seed's resource account (m/44'/195'/0'/1/1)
    settings.CHAIN_NODES = chain.nodes(energy="delegate", resource_address=resource)
    chain.devnet.fund(resource, sun=30_000 * SUN)
    chain.devnet.fund(HOT, sun=50 * SUN)
    chain.mine()
    chain.devnet.stake(resource, 1_000 * SUN)  # 10,000 energy on the devnet: less than one transfer

    payouts.payout_monitor_all()  # the hot address holds no token yet: no transfer to measure
    unmeasured = Alert.objects.filter(kind="energy_low").exists()
    chain.devnet.fund(HOT, token=10 * SUN)
    chain.mine()
    payouts.payout_monitor_all()

    low = Alert.objects.get(kind="energy_low", status=AlertStatus.OPEN)
    assert not unmeasured
    assert low.key == "trc20usdt"  # the code that delegates; trx lends no energy
    assert re.fullmatch(
        rf"trc20usdt: the resource account {resource} has 10000 energy to lend, less than one token transfer "
        r"needs \(\d+\): stake more TRX for energy there",
        low.message,
    )
    chain.devnet.stake(resource, 20_000 * SUN)
    payouts.payout_monitor_all()
    assert Alert.objects.get(pk=low.pk).status == AlertStatus.RESOLVED
