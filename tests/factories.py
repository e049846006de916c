"""factory-boy factories for the test data: merchants, invoices, withdrawals and deposits.

Each builds its object through the service the product uses (merchant_create, invoice_create and
invoice_fill, withdrawal_request after a funding credit, static_address_get_or_create and a sandbox
transfer), so a factory-made object always holds the invariants the code relies on (hashed token,
encrypted secret, ledger entries, webhook events)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import factory

from invoices.models import Invoice
from invoices.services import ItemInput, invoice_create, invoice_fill
from payments.models import Deposit, StaticDepositAddress
from payments.services import MerchantCredentials, merchant_create
from payments.static_deposits import static_address_get_or_create
from tests import chain
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

PASSWORD = "correct horse battery"
BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


class MerchantFactory(factory.Factory):
    """A dashboard user and their company: `MerchantCredentials` (company, token and secret in clear)."""

    class Meta:
        model = MerchantCredentials

    name = factory.Sequence(lambda n: f"Shop {n}")
    email = factory.Sequence(lambda n: f"owner{n}@shop.test")
    password = PASSWORD

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> MerchantCredentials:
        return merchant_create(**kwargs)


class InvoiceFactory(factory.Factory):
    """An invoice of `company` (a new merchant's by default); `code=...` fills it as the client would."""

    class Meta:
        model = Invoice

    company = factory.LazyFunction(lambda: MerchantFactory().company)
    invoice_currency = "usd"
    items = factory.LazyFunction(lambda: [ItemInput(name="Coffee beans", price=Decimal("100"))])
    is_merchant_pays_fee = False
    payment_currency = None
    redirect_url = None
    code = None  # a payment code: fill the invoice (created -> pending) with it
    client_email = "client@example.com"

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> Invoice:
        code, email = kwargs.pop("code"), kwargs.pop("client_email")
        invoice = invoice_create(**kwargs)
        if code:
            invoice = invoice_fill(invoice_id=invoice.pk, client_email=email, payment_currency=code)
        return invoice


class WithdrawalFactory(factory.Factory):
    """One accepted withdrawal (processing, held); its company is funded first unless `funded=False`."""

    class Meta:
        model = Withdrawal

    company = factory.LazyFunction(lambda: MerchantFactory().company)
    asset = "btc"
    to = BTC_ADDRESS
    amount = Decimal("0.001")
    tag = ""
    funded = True

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> Withdrawal:
        company, funded = kwargs.pop("company"), kwargs.pop("funded")
        item = WithdrawalItem(**kwargs)
        if funded:
            chain.fund(company, item.asset, item.amount * 2)  # amount and any network fee
        return withdrawal_request(company=company, items=[item])[0]


class StaticDepositAddressFactory(factory.Factory):
    """A static deposit address of one of the merchant's users."""

    class Meta:
        model = StaticDepositAddress

    company = factory.LazyFunction(lambda: MerchantFactory().company)
    internal_user_id = factory.Sequence(lambda n: f"user-{n}")
    email = ""
    asset = "btc"
    network = "btc"

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> StaticDepositAddress:
        static, _ = static_address_get_or_create(**kwargs)
        return static


class DepositFactory(factory.Factory):
    """A transfer seen on the sandbox chain to a static address (`address=`, made when not given)."""

    class Meta:
        model = Deposit

    address = factory.SubFactory(StaticDepositAddressFactory)
    amount = Decimal("0.01")
    outcome = "confirm"

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> Deposit:
        static: StaticDepositAddress = kwargs["address"]
        target = static.deposit_address
        tx = chain.pay_address(
            static.code, target.address, kwargs["amount"], tag=target.tag, outcome=kwargs["outcome"]
        )
        return Deposit.objects.get(code=static.code, txid=tx.txid)
