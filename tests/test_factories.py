"""The factories build what the services build: objects that hold the product's invariants."""

from __future__ import annotations

from decimal import Decimal

import pytest

from core.errors import ValidationFailed
from invoices.models import Invoice
from payments.ledger import ledger_verify
from payments.models import Account, Deposit
from payments.services import token_hash
from tests.chain import fund
from tests.factories import (
    PASSWORD,
    CompanyFactory,
    DepositFactory,
    InvoiceFactory,
    MerchantFactory,
    StaticDepositAddressFactory,
    UserFactory,
    WithdrawalFactory,
)
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


def test_a_user_and_a_company_are_made_like_a_merchants():
    user = UserFactory(email=" Staff@Kassa.test ", password=None)
    assert (user.username, user.email, user.has_usable_password()) == ("staff@kassa.test",) * 2 + (False,)
    company = CompanyFactory(name="Roastery")
    assert company.name == "Roastery" and company.owner.check_password(PASSWORD)
    assert company.signing_secret_encrypted and len(company.token_hash) == 64


def test_factories_refuse_to_build_unsaved_objects():
    for made in (InvoiceFactory, WithdrawalFactory, MerchantFactory):
        with pytest.raises(TypeError, match="through"):
            made.build()


@pytest.fixture
def rates(settings, tmp_path):
    """Round prices: 100 usd is 0.001 btc, plus the 1 % fee."""
    settings.RATES_PROVIDER = "static"
    settings.RATES_STATIC_USD = {**settings.RATES_STATIC_USD, "btc": "100000"}
    settings.RATES_FILE = str(tmp_path / "no-rates.json")
    settings.INVOICE_FEE_PERCENT = "1"


@pytest.mark.usefixtures("rates")
def test_a_paid_invoice_is_paid_on_the_sandbox_chain_and_confirmed():
    done = InvoiceFactory(code="btc", paid="0.00101")
    short = InvoiceFactory(code="btc", paid="0.0006")

    assert done.status == Invoice.Status.DONE and done.paid_amount == done.amount_due
    assert short.status == Invoice.Status.WRONG
    assert Deposit.objects.get(deposit_address=short.deposit_address).status == Deposit.Status.CONFIRMED
    assert ledger_verify() == []


@pytest.mark.parametrize(("asset", "amount"), [("btc", "0.001"), ("eth", "0.01"), ("ton", "1.5")])
def test_a_funded_withdrawal_is_funded_with_exactly_its_amount_and_fee(asset, amount):
    extra = {"tag": "100200"} if asset == "ton" else {}
    withdrawal = WithdrawalFactory(asset=asset, amount=amount, **extra)

    account = Account.objects.get(company=withdrawal.company, code=asset)
    assert (account.available, account.held) == (0, withdrawal.amount + withdrawal.fee)


def test_an_unfunded_withdrawal_needs_the_balance():
    company = CompanyFactory()
    with pytest.raises(ValidationFailed) as refused:
        WithdrawalFactory(company=company, funded=False)
    assert [error.code for error in refused.value.errors] == ["insufficient_balance"]
    fund(company, "btc", "1")
    assert WithdrawalFactory(company=company, funded=False).status == Withdrawal.Status.PROCESSING


def test_done_and_rejected_withdrawals_move_their_hold_through_the_ledger():
    done = WithdrawalFactory(status="done")
    rejected = WithdrawalFactory(status="rejected")

    assert done.status == Withdrawal.Status.DONE and done.txid
    assert Account.objects.get(company=done.company, code="btc").held == 0  # posted
    assert rejected.status == Withdrawal.Status.REJECTED
    back = Account.objects.get(company=rejected.company, code="btc")
    assert (back.available, back.held) == (rejected.amount + rejected.fee, 0)  # released
    assert ledger_verify() == []


def test_a_confirmed_deposit_credits_the_static_address_owner():
    static = StaticDepositAddressFactory(network="ton")
    deposit = DepositFactory(address=static, amount=Decimal("2"), confirm=True)

    assert deposit.status == Deposit.Status.CONFIRMED and deposit.company_id == static.company_id
    assert Account.objects.get(company=static.company, code="ton").available == Decimal("2")
