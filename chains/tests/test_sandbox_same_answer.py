"""The sandbox never tells a merchant whether an address (or an invoice, a withdrawal) is another merchant's:
another merchant's gets, byte for byte, the answer of one that does not exist (chains/simulator.py)."""

from __future__ import annotations

import re
import uuid

import pytest
from rest_framework.test import APIClient

from invoices.models import Invoice
from payments.models import DepositAddress, SandboxTransaction
from tests.chain import pay_address
from tests.dashboard import Dash
from tests.factories import InvoiceFactory, StaticDepositAddressFactory, WithdrawalFactory

pytestmark = pytest.mark.django_db

CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"')


def _forget(deposit_address: DepositAddress) -> None:
    """The gateway no longer knows the address: the same request now names an unknown one."""
    gone = f"gone-{uuid.uuid4().hex}"
    DepositAddress.objects.filter(pk=deposit_address.pk).update(address=gone, route_key=gone)


def _theirs(other_merchant, code: str = "btc") -> DepositAddress:  # type: ignore[no-untyped-def]
    invoice = InvoiceFactory(company=other_merchant.company, code=code)
    return Invoice.objects.get(pk=invoice.pk).deposit_address  # type: ignore[return-value]


def _api_deposit(api: APIClient, address: str, tag: str = "", code: str = "btc"):  # type: ignore[no-untyped-def]
    body = {"address": address, "asset": code, "amount": "0.001", **({"tag": tag} if tag else {})}
    return api.post("/api/sandbox/deposits", body, format="json")


def _answer(response) -> tuple[int, str, bytes]:  # type: ignore[no-untyped-def]
    # Each response has its own request id (header and problem+json `requestId`); the rest is compared.
    content = response.content.replace(response["X-Request-ID"].encode(), b"<request id>")
    return response.status_code, response["Content-Type"], content


def test_the_api_answers_another_merchants_address_as_an_unknown_one(api, other_merchant):
    theirs = _theirs(other_merchant)

    foreign = _api_deposit(api, theirs.address)
    _forget(theirs)
    unknown = _api_deposit(api, theirs.address)

    assert _answer(foreign) == _answer(unknown)
    assert foreign.status_code == 404
    assert not SandboxTransaction.objects.exists()


def test_the_api_answers_another_merchants_ton_tag_as_an_unknown_one(api, merchant, other_merchant):
    mine = StaticDepositAddressFactory(company=merchant.company, network="ton").deposit_address
    theirs = StaticDepositAddressFactory(company=other_merchant.company, network="ton").deposit_address
    assert mine.address == theirs.address  # TON: one address, a tag each

    foreign = _api_deposit(api, theirs.address, theirs.tag, code="ton")
    unknown = _api_deposit(api, theirs.address, "999999999", code="ton")

    assert _answer(foreign) == _answer(unknown)
    assert foreign.status_code == 404
    assert not SandboxTransaction.objects.exists()


def test_the_api_still_pays_the_merchants_own_addresses(api, merchant):
    own = InvoiceFactory(company=merchant.company, code="btc")
    own_ton = StaticDepositAddressFactory(company=merchant.company, network="ton").deposit_address

    paid = _api_deposit(api, Invoice.objects.get(pk=own.pk).deposit_address.address)  # type: ignore[union-attr]
    untagged = _api_deposit(api, own_ton.address, code="ton")

    assert paid.status_code == 201 and paid.json()["routed"] is True
    assert untagged.status_code == 201 and untagged.json()["routed"] is False  # recorded, credited to nobody


def test_the_operators_simulator_still_pays_any_address(other_merchant):
    theirs = _theirs(other_merchant)

    tx = pay_address("btc", theirs.address, "0.001")  # manage.py sandbox deposit: no company

    assert tx.to_address == theirs.address


def test_the_dashboard_answers_another_merchants_address_as_an_unknown_one(merchant, other_merchant):
    dash = Dash()
    dash.client.force_login(merchant.company.owner)
    theirs = _theirs(other_merchant)
    body = {"address": theirs.address, "asset": "btc", "amount": "0.001", "tag": "", "outcome": "confirm"}

    foreign = dash.post("/dashboard/sandbox/deposit/", body)
    _forget(theirs)
    unknown = dash.post("/dashboard/sandbox/deposit/", body)

    assert foreign.status_code == unknown.status_code == 200
    assert CSRF.sub(b"", foreign.content) == CSRF.sub(b"", unknown.content)
    assert b"This is not one of your deposit addresses" in foreign.content
    assert not SandboxTransaction.objects.exists()


def test_expiring_another_merchants_invoice_answers_as_an_unknown_one(api, other_merchant):
    theirs = InvoiceFactory(company=other_merchant.company, code="btc")
    path = "/api/sandbox/invoices/{}/expire"

    foreign = api.post(path.format(theirs.pk), format="json")
    unknown = api.post(path.format(uuid.uuid4()), format="json")

    assert _answer(foreign) == _answer(unknown)
    assert foreign.status_code == 404
    assert Invoice.objects.get(pk=theirs.pk).status == theirs.status


def test_rejecting_another_merchants_withdrawal_answers_as_an_unknown_one(api, other_merchant):
    theirs = WithdrawalFactory(company=other_merchant.company)
    unknown_uid = f"{theirs.uid.split('-')[0]}-{int(theirs.uid.split('-')[1]) + 1000}"

    foreign = api.post(f"/api/sandbox/withdrawals/{theirs.uid}/reject", format="json")
    unknown = api.post(f"/api/sandbox/withdrawals/{unknown_uid}/reject", format="json")

    assert _answer(foreign) == _answer(unknown)
    assert foreign.status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == "processing"
