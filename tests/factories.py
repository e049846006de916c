"""factory-boy factories for the test data: users, merchants, invoices, withdrawals and deposits.

Each makes its object through the service the product uses (merchant_create, invoice_create and
invoice_fill, withdrawal_request after a funding credit, static_address_get_or_create, a sandbox transfer
ingested by the chain poll), so a factory-made object always holds the invariants the code relies on: a
hashed token and an encrypted secret, a ledger entry for every amount held or moved, the webhook event of
every transition. Later states are reached the same way (an invoice is paid on the sandbox chain, a
withdrawal broadcast and mined or rejected by its service), never by writing a status. For the same reason
`build()` is refused: these objects only exist saved.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import factory
import pyotp
from django.contrib.auth import get_user_model
from factory.django import DjangoModelFactory

from chains.claims import deposit_claim_create
from chains.derivation import ton_deposit_address
from chains.models import DepositClaim, UnroutedDeposit
from chains.static_deposits import static_address_get_or_create
from core.assets import get_asset
from invoices.models import Invoice
from invoices.services import ItemInput, invoice_create, invoice_fill
from payments.members import member_add
from payments.models import Company, Deposit, DepositAddress, Membership, StaticDepositAddress
from payments.services import MerchantCredentials, merchant_create
from payments.tokens import IssuedToken, api_token_create
from security import recovery, totp
from security.audit import audit_record
from security.models import AuditEvent, TotpDevice
from tests import chain
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import (
    withdrawal_items_check,
    withdrawal_reject,
    withdrawal_request,
)
from withdrawals.tests.conftest import ADDRESSES

PASSWORD = "correct horse battery"
BTC_ADDRESS = ADDRESSES["btc"]


class _ServiceFactory(DjangoModelFactory):
    """A factory whose `_create` calls the product's service; an unsaved object would skip it."""

    class Meta:
        abstract = True
        skip_postgeneration_save = True

    @classmethod
    def _build(cls, model_class: type, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{cls.__name__} makes its object through a service: call {cls.__name__}().")


class UserFactory(_ServiceFactory):
    """A dashboard user without a company (staff, SSO): the username is the e-mail, as for merchants."""

    class Meta:
        model = get_user_model()

    email = factory.Sequence(lambda n: f"user{n}@kassa.test")
    password: str | None = PASSWORD  # None: an unusable password

    @classmethod
    def _create(cls, model_class: type, *, email: str, password: str | None, **extra: Any) -> Any:
        email = email.strip().lower()
        return get_user_model().objects.create_user(username=email, email=email, password=password, **extra)


class MemberFactory(_ServiceFactory):
    """A member of `company` with `role` (a new user of its own), by `member_add`."""

    class Meta:
        model = Membership

    company = factory.SubFactory("tests.factories.CompanyFactory")
    role = "viewer"
    email = factory.Sequence(lambda n: f"member{n}@shop.test")

    @classmethod
    def _create(
        cls, model_class: type, *, company: Company, role: str, email: str, **extra: Any
    ) -> Membership:
        return member_add(company=company, user=UserFactory(email=email), role=role)


class MerchantFactory(factory.Factory):
    """A dashboard user and their company by `merchant_create`: `MerchantCredentials` (the company, its
    public token and signing secret in clear, which exist only here). `password=None`: no login until a
    reset. The conftest `merchant` and `other_merchant` fixtures are made by it."""

    class Meta:
        model = MerchantCredentials

    name = factory.Sequence(lambda n: f"Shop {n}")
    email = factory.Sequence(lambda n: f"owner{n}@shop.test")
    password: str | None = PASSWORD

    @classmethod
    def _build(cls, model_class: type, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("MerchantFactory makes its merchant through merchant_create: call MerchantFactory().")

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> MerchantCredentials:
        return merchant_create(**kwargs)


class CompanyFactory(_ServiceFactory):
    """A merchant's company (with its owner) by `merchant_create`, when the clear token is not needed."""

    class Meta:
        model = Company

    name = factory.Sequence(lambda n: f"Company {n}")
    email = factory.Sequence(lambda n: f"company{n}@shop.test")
    password: str | None = PASSWORD

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> Company:
        return merchant_create(**kwargs).company


class InvoiceFactory(_ServiceFactory):
    """An invoice by `invoice_create` (created); with `code` also filled by `invoice_fill` as the client
    would (pending: address, rate, fee and expiry); with `paid` that amount is then sent to its address on
    the sandbox chain and mined to the asset's confirmations (done, or wrong when short).

    `payment_currency` is the merchant's fixed asset, as `invoice_create` names it."""

    class Meta:
        model = Invoice

    company = factory.SubFactory(CompanyFactory)
    invoice_currency = "usd"
    total: Decimal | str = Decimal("100")  # the price of the one default item (ignored with `items`)
    items = factory.LazyAttribute(lambda o: [ItemInput(name="Coffee beans", price=Decimal(o.total))])
    is_merchant_pays_fee = False
    payment_currency: str | None = None
    redirect_url: str | None = None
    code: str | None = None  # a payment code: fill the invoice with it (created -> pending)
    client_email = "client@example.com"
    paid: Decimal | str | None = None  # pay this much and confirm it (needs `code`)

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> Invoice:
        code, email, paid = kwargs.pop("code"), kwargs.pop("client_email"), kwargs.pop("paid")
        del kwargs["total"]  # invoice_create sums the items
        invoice = invoice_create(**kwargs)
        if code:
            invoice = invoice_fill(invoice_id=invoice.pk, client_email=email, payment_currency=code)
        if paid is not None:
            if not code:
                raise TypeError("InvoiceFactory(paid=...) needs code=...: a created invoice has no address")
            invoice = chain.pay(invoice, paid, confirm=True)
        return invoice


class WithdrawalFactory(_ServiceFactory):
    """One withdrawal accepted by `withdrawal_request` (processing: amount + network fee held in the ledger,
    its webhook written, its broadcast enqueued at commit).

    `funded=True` credits exactly amount + fee first (an operator adjustment), so the company's available
    balance is what it was; `funded=False` leaves the balance to the test. `status="done"` broadcasts it,
    mines its confirmations and settles it (the hold is posted); `status="rejected"` rejects it (the hold
    is released). `to` defaults to a valid address of the asset (withdrawals/tests/conftest.ADDRESSES).
    """

    class Meta:
        model = Withdrawal

    company = factory.SubFactory(CompanyFactory)
    asset = "btc"
    to = factory.LazyAttribute(lambda o: ADDRESSES[o.asset.lower()])
    amount = Decimal("0.001")
    tag = ""
    funded = True
    status = Withdrawal.Status.PROCESSING

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> Withdrawal:
        company, funded, status = kwargs.pop("company"), kwargs.pop("funded"), kwargs.pop("status")
        item = WithdrawalItem(**{**kwargs, "amount": Decimal(kwargs["amount"])})
        if funded:
            (checked,) = withdrawal_items_check([item])
            chain.fund(company, checked.code, checked.amount + checked.fee)
        (withdrawal,) = withdrawal_request(company=company, items=[item])
        if status == Withdrawal.Status.DONE:
            # What the worker and the chain do: send it, mine its confirmations (the sandbox's after-blocks
            # hook runs the payout monitor, which settles it).
            chain.send_payouts(withdrawal.code)
            chain.mine(withdrawal.code, get_asset(withdrawal.code).confirmations)
        elif status == Withdrawal.Status.REJECTED:
            withdrawal_reject(uid=withdrawal.uid, reason="Rejected by a test.")
        elif status != Withdrawal.Status.PROCESSING:
            raise ValueError(f"WithdrawalFactory cannot reach status {status!r}")
        withdrawal.refresh_from_db()
        return withdrawal


class StaticDepositAddressFactory(_ServiceFactory):
    """A static deposit address of one of the merchant's users, by `static_address_get_or_create`."""

    class Meta:
        model = StaticDepositAddress

    company = factory.SubFactory(CompanyFactory)
    internal_user_id = factory.Sequence(lambda n: f"user-{n}")
    email = ""
    network = "btc"  # the payment code
    asset = factory.LazyAttribute(lambda o: get_asset(o.network).base)

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> StaticDepositAddress:
        static, _ = static_address_get_or_create(**kwargs)
        return static


class DepositFactory(_ServiceFactory):
    """A transfer to a static address (or any DepositAddress) on the sandbox chain, ingested by the chain
    poll as a real one is: seen, or mined to its confirmations with `confirm=True` (for a static address
    that credits the merchant)."""

    class Meta:
        model = Deposit

    address = factory.SubFactory(StaticDepositAddressFactory)
    amount = Decimal("0.01")
    outcome = "confirm"
    confirm = False

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> Deposit:
        target = kwargs["address"]
        deposit_address: DepositAddress = (
            target.deposit_address if isinstance(target, StaticDepositAddress) else target
        )
        tx = chain.pay_address(
            deposit_address.code,
            deposit_address.address,
            kwargs["amount"],
            tag=deposit_address.tag,
            outcome=kwargs["outcome"],
        )
        if kwargs["confirm"]:
            chain.mine(deposit_address.code, get_asset(deposit_address.code).confirmations)
        return Deposit.objects.get(code=tx.code, txid=tx.txid)


class UnroutedDepositFactory(_ServiceFactory):
    """A sandbox payment no invoice or address owns, recorded by the chain poll as a real one is: by default
    to the shared TON deposit address with a comment that names nothing (`tag=""`: no comment), from a real
    TON address (`sender`, where a refund goes back), mined to its confirmations with `confirm=True` (final:
    a person may act on it); `outcome="fail"` fails on chain once mined."""

    class Meta:
        model = UnroutedDeposit

    code = "ton"
    address = factory.LazyFunction(ton_deposit_address)
    tag = "no-such-invoice"
    amount: Decimal | str = Decimal("2")
    sender = ADDRESSES["ton"]
    outcome = "confirm"
    confirm = True

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> UnroutedDeposit:
        code = kwargs["code"]
        tx = chain.pay_address(
            code,
            kwargs["address"],
            kwargs["amount"],
            tag=kwargs["tag"],
            sender=kwargs["sender"],
            outcome=kwargs["outcome"],
        )
        if kwargs["confirm"]:
            chain.mine(code, get_asset(code).confirmations)
        return UnroutedDeposit.objects.select_related("deposit").get(
            deposit__code=code, deposit__txid=tx.txid
        )


class DepositClaimFactory(_ServiceFactory):
    """A merchant's claim on a payment (its transaction hash), by `deposit_claim_create` as the dashboard's
    *Payment claims* form makes it."""

    class Meta:
        model = DepositClaim

    company = factory.SubFactory(CompanyFactory)
    code = "ton"
    txid = factory.Sequence(lambda n: f"{n:064x}")
    invoice_id = ""
    message = ""

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> DepositClaim:
        return deposit_claim_create(**kwargs)


class TotpDeviceFactory(_ServiceFactory):
    """A confirmed authenticator of `user` by the enrolment services, confirmed with the code of the step
    before now (so the current code is still unused); `.secret` (base32) and `.recovery_codes` in clear."""

    class Meta:
        model = TotpDevice

    user = factory.SubFactory(UserFactory)

    @classmethod
    def _create(cls, model_class: type, *, user: Any) -> TotpDevice:
        device = totp.totp_enrol_start(user=user)
        secret = totp.device_secret(device)
        assert totp.totp_enrol_confirm(user=user, code=pyotp.TOTP(secret).at(totp._now() - totp.INTERVAL))
        device.refresh_from_db()
        device.secret = secret  # type: ignore[attr-defined]
        device.recovery_codes = recovery.recovery_codes_generate(user=user)  # type: ignore[attr-defined]
        return device


class AuditEventFactory(_ServiceFactory):
    """A row of a company's audit log by `audit_record`, as from the command line (no request)."""

    class Meta:
        model = AuditEvent

    company = factory.SubFactory(CompanyFactory)
    action = "token.rotate"
    detail = ""

    @classmethod
    def _create(cls, model_class: type, *, company: Company, action: str, detail: str) -> AuditEvent:
        return audit_record(None, company=company, action=action, detail=detail)


class ApiTokenFactory(factory.Factory):
    """A named API token by `api_token_create`: `IssuedToken` (the row and, only here, its clear text)."""

    class Meta:
        model = IssuedToken

    company = factory.SubFactory(CompanyFactory)
    name = factory.Sequence(lambda n: f"token {n}")
    scopes: list[str] = ["invoices:read"]
    allowed_networks: list[str] = []

    @classmethod
    def _build(cls, model_class: type, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("ApiTokenFactory makes its token through api_token_create: call ApiTokenFactory().")

    @classmethod
    def _create(cls, model_class: type, *, company: Company, **kwargs: Any) -> IssuedToken:
        return api_token_create(company_id=company.pk, **kwargs)


class PayoutPolicyFactory(_ServiceFactory):
    """A company's payout policy by `payout_policy_set`: `cooldown_hours` and `limits` by payment code, e.g.
    {"btc": {"max_per_withdrawal": "0.01", "max_per_day": "0.05", "approval_above": "0.02"}} (an approval
    threshold needs the owner's authenticator: make a TotpDeviceFactory first). The company passed in has
    its `payout_policy_active` updated too."""

    class Meta:
        model = "withdrawals.PayoutPolicy"

    company = factory.SubFactory(CompanyFactory)
    cooldown_hours = 0
    limits: dict[str, dict[str, str]] = {}

    @classmethod
    def _create(cls, model_class: type, *, company: Company, cooldown_hours: int, limits: dict) -> Any:
        from withdrawals.policy import LimitInput, payout_policy_set

        inputs = {
            code: LimitInput(**{name: Decimal(value) for name, value in values.items()})
            for code, values in limits.items()
        }
        payout_policy_set(company=company, cooldown_hours=cooldown_hours, limits=inputs)
        return model_class._default_manager.get(company=company)  # type: ignore[attr-defined]
