"""Issue 42 on a real chain: an ltc invoice paid, a withdrawal finished and a credited deposit reversed on
a regtest litecoind (tests/nodes.py) each mail every subscribed member once, in their language, with no
secret, through the real sender (conftest.run_sender) and a real SMTP server on 127.0.0.1."""

from __future__ import annotations

import itertools
from decimal import Decimal
from email.message import EmailMessage
from types import SimpleNamespace
from typing import Any, cast

import pytest
from django.conf import settings as django_settings

from chains.scanning import chain_scan
from core.assets import get_asset
from invoices.models import Invoice
from notifications.models import MEMBER_KINDS, Kind, Notification
from notifications.preferences import preference_set
from notifications.tests.conftest import run_sender
from notifications.tests.smtp_server import SmtpServer
from payments.models import Deposit, Membership, StaticDepositAddress
from payments.roles import ADMIN, VIEWER
from payments.services import MerchantCredentials
from tests.chain import fund
from tests.factories import InvoiceFactory, MemberFactory, MerchantFactory, StaticDepositAddressFactory
from tests.nodes import Miner, Node, litecoind_regtest
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

pytestmark = pytest.mark.litecoind
_wallets = itertools.count(1)
SPANISH, VIEWER_EMAIL = "admin-es@shop.test", "viewer@shop.test"


@pytest.fixture(scope="module")
def node() -> Any:
    with litecoind_regtest() as running:
        yield running


@pytest.fixture(scope="module")
def miner(node: Node) -> Miner:
    return Miner(node)


@pytest.fixture
def ltc(node: Node, miner: Miner, settings: Any, db: None) -> SimpleNamespace:
    """ltc on the node through the bitcoincore backend, with fresh deposit and payout wallets (as in
    chains/tests/test_bitcoincore_pipeline.py)."""
    n = next(_wallets)
    settings.CHAIN_BACKENDS = {"ltc": "bitcoincore"}
    settings.CHAIN_NODES = {
        "ltc": {
            "url": node.url,
            "network": "regtest",
            "deposit_wallet": f"mail-deposits-{n}",
            "payout_wallet": f"mail-payouts-{n}",
            "fee_fallback": "0.0002",
        }
    }
    node.rpc.call("createwallet", f"mail-payouts-{n}", False, False, "", False, False)
    chain_scan("ltc")  # creates the watch-only deposit wallet and imports the first range
    return SimpleNamespace(node=node, miner=miner, payouts=node.rpc.wallet(f"mail-payouts-{n}"))


@pytest.fixture
def team(db: None) -> MerchantCredentials:
    """A merchant (its API token and signing secret in clear) whose owner keeps the English defaults, an
    admin who reads Spanish, and a viewer who is mailed about none of the three events."""
    # factory_boy's stubs type a call as the factory: cast to what the service made.
    merchant = cast(MerchantCredentials, MerchantFactory())
    admin = cast(Membership, MemberFactory(company=merchant.company, role=ADMIN, email=SPANISH))
    preference_set(user=admin.user, kinds=MEMBER_KINDS, language="es")
    MemberFactory(company=merchant.company, role=VIEWER, email=VIEWER_EMAIL)
    return merchant


def _scan_after(ltc: SimpleNamespace, blocks: int = 0) -> None:
    if blocks:
        ltc.miner.mine(blocks)
    chain_scan("ltc")


def _parts(message: EmailMessage) -> tuple[str, str]:
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    assert text is not None and html is not None, message
    return str(text.get_content()), str(html.get_content())


def _mailed_once(smtp: SmtpServer, merchant: MerchantCredentials, node: Node) -> dict[str, EmailMessage]:
    """Runs the sender twice; the mails of the first run by recipient: one to the English owner and one to
    the Spanish admin, none to the viewer, none from the second run, a text and an HTML part each, and no
    secret of the merchant or the node in any of it."""
    sent = run_sender()
    again = run_sender()

    messages = smtp.wait_for(2)
    assert (sent, again, len(smtp.messages)) == (2, 0, 2)
    by_to = {str(m["To"]): m for m in messages}
    owner = merchant.company.owner.email
    assert sorted(by_to) == sorted([owner, SPANISH])
    assert (by_to[owner]["Content-Language"], by_to[SPANISH]["Content-Language"]) == ("en", "es")
    rpc_password = node.url.split("//", 1)[1].split("@", 1)[0].split(":", 1)[1]
    secrets = [merchant.public_token, merchant.signing_secret, rpc_password, django_settings.SECRET_KEY]
    for message in messages:
        text, html = _parts(message)
        assert "<table>" in html
        for secret in secrets:
            assert secret not in message.as_string() and secret not in text and secret not in html
    return by_to


def test_an_ltc_invoice_paid_on_regtest_mails_each_subscribed_member_once(ltc, team, smtp):
    invoice = cast(Invoice, InvoiceFactory(company=team.company, code="ltc", total="10"))
    assert invoice.deposit_address is not None  # filled for ltc

    ltc.miner.pay(invoice.deposit_address.address, str(invoice.amount_due))
    _scan_after(ltc, get_asset("ltc").confirmations)
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    by_to = _mailed_once(smtp, team, ltc.node)

    owner_mail, spanish_mail = by_to[team.company.owner.email], by_to[SPANISH]
    assert "Invoice paid" in str(owner_mail["Subject"]) and "is paid" in _parts(owner_mail)[0]
    assert "Factura pagada" in str(spanish_mail["Subject"]) and "está pagada" in _parts(spanish_mail)[0]
    assert all(str(invoice.pk) in _parts(m)[0] for m in by_to.values())
    assert list(Notification.objects.values_list("kind", flat=True)) == [Kind.INVOICE_PAID] * 2


def test_an_ltc_withdrawal_finished_on_regtest_mails_each_subscribed_member_once(ltc, team, smtp):
    ltc.miner.pay(str(ltc.payouts.call("getnewaddress")), "1")
    ltc.miner.mine(1)
    fund(team.company, "ltc", "1")
    item = WithdrawalItem(asset="ltc", amount=Decimal("0.01"), to=ltc.miner.address(), tag="")
    (withdrawal,) = withdrawal_request(company=team.company, items=[item])

    payouts.payout_monitor("ltc")  # plan, sign, store
    payouts.payout_monitor("ltc")  # broadcast the stored bytes
    assert run_sender() == 0  # sent is not done: nobody is mailed yet
    ltc.miner.mine(get_asset("ltc").confirmations)
    payouts.payout_monitor("ltc")
    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.DONE and withdrawal.txid
    by_to = _mailed_once(smtp, team, ltc.node)

    owner_mail, spanish_mail = by_to[team.company.owner.email], by_to[SPANISH]
    assert str(owner_mail["Subject"]) == f"Withdrawal {withdrawal.uid} is done"
    assert str(spanish_mail["Subject"]) == f"El retiro {withdrawal.uid} está completado"
    assert all(withdrawal.txid in _parts(m)[0] for m in by_to.values())
    assert list(Notification.objects.values_list("kind", flat=True)) == [Kind.WITHDRAWAL_DONE] * 2


def test_a_credited_ltc_deposit_reversed_by_a_regtest_reorg_mails_each_subscribed_member_once(
    ltc, team, smtp
):
    static = cast(StaticDepositAddress, StaticDepositAddressFactory(company=team.company, network="ltc"))
    txid = ltc.miner.pay(static.deposit_address.address, "0.4")
    (fork,) = ltc.miner.mine(1)
    _scan_after(ltc, get_asset("ltc").confirmations)
    deposit = Deposit.objects.get(txid=txid)
    assert (deposit.status, deposit.block_hash, deposit.reversed_at) == ("confirmed", fork, None)
    # Past the 10 blocks whose transactions litecoind puts back in its mempool when they are disconnected.
    _scan_after(ltc, 11)
    assert run_sender() == 0  # credited is not news: nobody is mailed yet

    depth = ltc.node.rpc.call("getblockcount") - ltc.node.rpc.call("getblock", fork)["height"] + 1
    ltc.node.rpc.call("invalidateblock", fork)
    ltc.miner.mine(depth + 1)  # a longer branch without the deposit
    assert txid not in ltc.node.rpc.call("getrawmempool")
    _scan_after(ltc)  # the scan reports the reorganisation: the settled watch reverses the deposit
    deposit.refresh_from_db()
    assert deposit.status == "confirmed" and deposit.reversed_at is not None
    by_to = _mailed_once(smtp, team, ltc.node)

    owner_mail, spanish_mail = by_to[team.company.owner.email], by_to[SPANISH]
    assert str(owner_mail["Subject"]) == "A credited deposit was reversed: 0.4 LTC"
    assert str(spanish_mail["Subject"]) == "Se revirtió un depósito acreditado: 0.4 LTC"
    assert all(txid in _parts(m)[0] for m in by_to.values())
    assert list(Notification.objects.values_list("kind", flat=True)) == [Kind.DEPOSIT_REVERSED] * 2
