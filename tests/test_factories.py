"""The factories build what the services build: objects that hold the product's invariants."""

from __future__ import annotations

from decimal import Decimal

import pytest

from invoices.models import Invoice
from payments.models import Account, Deposit
from payments.services import token_hash
from tests.factories import DepositFactory, InvoiceFactory, MerchantFactory, WithdrawalFactory
from webhooks.models import WebhookEvent
from withdrawals.models import Withdrawal

pytestmark = pytest.mark.django_db


def test_a_merchant_has_a_hashed_token_and_a_secret():
    merchant = MerchantFactory()
    assert merchant.company.token_hash == token_hash(merchant.public_token)
    assert merchant.signing_secret.startswith("whsec_")
    assert MerchantFactory().company.pk != merchant.company.pk


def test_an_invoice_is_created_or_filled_through_the_services():
    created = InvoiceFactory()
    assert created.status == Invoice.Status.CREATED
    filled = InvoiceFactory(code="btc")
    assert filled.status == Invoice.Status.PENDING and filled.deposit_address is not None
    statuses = WebhookEvent.objects.filter(object_id=str(filled.pk)).values_list("event_status", flat=True)
    assert sorted(statuses) == ["created", "pending"]


def test_a_withdrawal_holds_its_amount_and_fee():
    withdrawal = WithdrawalFactory(amount=Decimal("0.001"))
    account = Account.objects.get(company=withdrawal.company, code="btc")
    assert withdrawal.status == Withdrawal.Status.PROCESSING
    assert account.held == withdrawal.amount + withdrawal.fee


def test_a_deposit_is_seen_on_its_static_address():
    deposit = DepositFactory(amount=Decimal("0.02"))
    assert deposit.status == Deposit.Status.SEEN
    assert deposit.amount == Decimal("0.02")
