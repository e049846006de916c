"""The invoice lifecycle as a Hypothesis state machine (docs/api.md), on real services.

Random invoices are created, filled, paid (part, in full, over, at the underpayment limit, failing, late,
to another spelling of the address, in another asset), mined, expired, accepted and refunded in random
order. A plain in-memory model written from the spec predicts each status; after every step the database
must agree with it on statuses, the webhook outbox (one event per transition, in order, only legal edges,
terminal states terminal), the deposits, the ledger credits per invoice and the merchant's balances.

Isolation: pytest-django's `django_db` mark wraps the whole Hypothesis run (one unittest `runTest`) in the
usual test transaction, with the merchant made once inside it. Each example then opens its own savepoint in
the machine's `__init__` and `teardown` rolls it back, so every example starts from the same database
(merchant only) without truncating tables, and the services' own `transaction.atomic` blocks nest inside
as further savepoints. Hypothesis calls `teardown` in a `finally`, so a failing step rolls back too.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal, localcontext
from typing import Any

import hypothesis
import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from chains.addresses import validate_address
from chains.derivation import derive_address
from core.assets import INVOICE_CURRENCIES, all_assets, get_asset
from core.errors import InvalidState, ValidationFailed
from invoices import services
from invoices.models import Invoice, InvoiceItem, UnderpaymentLimit
from invoices.services import (
    ItemInput,
    close_overdue_invoices,
    invoice_accept,
    invoice_close,
    invoice_create,
    invoice_fill,
    invoice_refund,
)
from payments.ledger import ledger_verify
from payments.models import Company, Deposit, LedgerEntry
from payments.selectors import balance_list_for_company
from tests import chain
from tests.factories import InvoiceFactory
from webhooks.models import WebhookEvent

CODES = [asset.code for asset in all_assets()]
# Codes whose addresses look alike (one key per family): a payment in the sibling asset reaches the address.
SIBLINGS = {
    code: [other for other in CODES if other != code and get_asset(other).family == get_asset(code).family]
    for code in CODES
}
FINAL = frozenset({"done", "refunded", "closed"})
# docs/api.md and docs/decisions.md; nothing leaves done, refunded or closed.
LEGAL_EDGES = frozenset(
    {
        ("created", "pending"),
        ("pending", "processing"),
        ("pending", "closed"),
        ("processing", "done"),
        ("processing", "wrong"),
        ("processing", "closed"),
        ("wrong", "done"),
        ("wrong", "refunded"),
    }
)
MAX_INVOICES = 4
# Every poll re-reads each open transfer of its chain: more than a few in flight only makes steps slower.
MAX_OPEN_PAYMENTS = 4
EMAIL = "client@example.com"
NOT_EXPIRED, EXPIRED, PAST_GRACE = 0, 1, 2
# Shares of the amount due: named ones, or a percentage (under 100: a part payment).
SHARES = st.sampled_from(
    ["remainder", "exact", "over", "double", "tiny", "unit short", "remainder short", "limit", "under limit"]
) | st.integers(1, 99)
OUTCOMES = st.sampled_from(["confirm", "confirm", "fail", "freeze"])

refund_calls: list[tuple[str, str, str, Decimal, str]] = []


def _record_refund(invoice: Invoice) -> None:
    """Stands in for the withdrawals app's refund handler when that app has not registered one."""
    refund_calls.append(
        (str(invoice.pk), invoice.refund_address, invoice.refund_tag, invoice.paid_amount, invoice.status)
    )


def _rounded(value: Decimal, places: int, rounding: str) -> Decimal:
    with localcontext(prec=100):
        return value.quantize(Decimal(1).scaleb(-places), rounding=rounding)


def _unit(code: str) -> Decimal:
    return Decimal(1).scaleb(-get_asset(code).display_decimals)


@functools.cache
def _refund_destination(code: str) -> tuple[str, str]:
    # Far above any index the example allocates, so never one of the invoice deposit addresses (TON: tag).
    address, tag = derive_address(code, 1_000_000)
    return address, tag or ""


def _respelled(code: str, address: str, tag: str) -> tuple[str, str]:
    """Another valid spelling of the same destination, as a wallet or a node may write it."""
    family = get_asset(code).family
    if family == "evm":
        return address.lower(), tag
    if family == "ton":
        return _ton_form(address, is_bounceable=True), f" {tag} "
    if family in ("btc", "ltc", "bch"):
        return address.upper(), tag
    return address, tag


def _ton_form(address: str, **form: bool) -> str:
    from pytoniq_core import Address

    return Address(address).to_str(**form)


def _usd_price(symbol: str) -> Decimal:
    return Decimal(1) if symbol == "usd" else Decimal(django_settings.RATES_STATIC_USD[symbol])


def _expected_rate(currency: str, code: str) -> Decimal:
    base = get_asset(code).base
    if currency == base:
        return Decimal(1)
    with localcontext(prec=100):
        return _rounded(_usd_price(currency) / _usd_price(base), 18, ROUND_DOWN)


# --- the model --------------------------------------------------------------------------------------------


@dataclass
class PaymentModel:
    pk: int  # the Deposit row
    invoice_id: str | None  # None: sent in another asset, so the gateway must not route it to the invoice
    code: str
    amount: Decimal
    outcome: str
    block: int | None = None  # None: in the mempool
    status: str = "seen"
    is_late: bool = False


@dataclass
class InvoiceModel:
    id: str
    currency: str
    total: Decimal
    merchant_pays: bool
    fixed_code: str
    status: str = "created"
    path: list[str] = field(default_factory=lambda: ["created"])
    observed: list[str] = field(default_factory=lambda: ["created"])  # statuses read between steps
    code: str = ""
    address: str = ""
    tag: str = ""
    fee: Decimal = Decimal(0)
    amount_due: Decimal = Decimal(0)
    expiry: int = NOT_EXPIRED
    paid: Decimal = Decimal(0)  # confirmed and not late
    payments: list[PaymentModel] = field(default_factory=list)

    def move(self, status: str) -> None:
        assert (self.status, status) in LEGAL_EDGES, f"model bug: {self.status} -> {status}"
        event(f"transition {self.status} -> {status}")
        self.status = status
        self.path.append(status)

    def open_payments(self) -> bool:
        return any(p.status == "seen" and not p.is_late for p in self.payments)

    def expected_credit(self) -> Decimal:
        """What the merchant's ledger holds for this invoice (INVOICE_CREDIT, both references)."""
        late = sum((p.amount for p in self.payments if p.is_late and p.status == "confirmed"), Decimal(0))
        if self.status == "done":  # via payment or accept: what arrived in time, less the fee
            return self.paid - min(self.fee, self.paid) + late
        if self.status in ("refunded", "closed"):
            # refunded: credited, then held (sent back) by the refund. closed: what confirmed before the
            # close (a part, while another payment was still open) is the merchant's in full.
            return self.paid + late
        return late  # not final: nothing yet (and no late payment either)


# --- the machine ------------------------------------------------------------------------------------------


class InvoiceLifecycle(RuleBasedStateMachine):
    company: Company | None = None  # the `merchant` fixture's, set by `_lifecycle_world`

    def __init__(self) -> None:
        super().__init__()
        assert self.company is not None, "runs only under the _lifecycle_world fixture"
        # One savepoint per example, rolled back in teardown (see the module docstring).
        self._example = transaction.atomic()
        self._example.__enter__()
        self.invoices: list[InvoiceModel] = []
        self.payments: list[PaymentModel] = []  # creation order = the sandbox chain's polling order
        self.tips: dict[str, int] = defaultdict(int)
        self.limits: dict[str, tuple[Decimal, Decimal]] = {}
        self.fee_percent = Decimal(django_settings.INVOICE_FEE_PERCENT)
        self.local_refunds = _record_refund in services.refund_handlers
        refund_calls.clear()

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._example.__exit__(None, None, None)

    # --- helpers --------------------------------------------------------------------------------------

    def _pick(self, pick: int, *statuses: str, filled: bool = False) -> InvoiceModel:
        candidates = [
            inv
            for inv in self.invoices
            if (not statuses or inv.status in statuses) and (not filled or inv.status != "created")
        ]
        return candidates[pick % len(candidates)]

    def _has(self, *statuses: str, filled: bool = False) -> bool:
        return any(
            (not statuses or inv.status in statuses) and (not filled or inv.status != "created")
            for inv in self.invoices
        )

    def _open_count(self) -> int:
        return sum(1 for payment in self.payments if payment.status == "seen")

    def _by_id(self, invoice_id: str) -> InvoiceModel:
        return next(inv for inv in self.invoices if inv.id == invoice_id)

    def _tolerance(self, inv: InvoiceModel) -> Decimal:
        static, percentage = self.limits.get(inv.code, (Decimal(0), Decimal(0)))
        with localcontext(prec=100):
            return max(static, inv.amount_due * percentage / 100)

    def _seen(self, payment: PaymentModel) -> None:
        if payment.invoice_id is None:
            return
        inv = self._by_id(payment.invoice_id)
        if inv.status in FINAL:
            payment.is_late = True
            event("late payment seen")
        elif inv.status == "pending":
            inv.move("processing")

    def _settled(self, payment: PaymentModel) -> None:
        """A routed payment confirmed or failed (docs/decisions.md)."""
        if payment.invoice_id is None:
            return
        inv = self._by_id(payment.invoice_id)
        if inv.status in FINAL:
            if payment.status == "confirmed":  # recorded, credited in full, flagged late
                payment.is_late = True
                event("late payment credited")
            return
        assert inv.status in ("processing", "wrong"), inv.status
        inv.paid = sum(
            (p.amount for p in inv.payments if p.status == "confirmed" and not p.is_late), Decimal(0)
        )
        complete = inv.paid >= inv.amount_due - self._tolerance(inv)
        if inv.status == "wrong":
            if complete and inv.expiry == NOT_EXPIRED:  # topped up before expiredAt
                inv.move("done")
            return
        if complete:
            inv.move("done")
        elif not inv.open_payments() and inv.paid > 0:
            inv.move("wrong")

    def _close(self, inv: InvoiceModel) -> None:
        if inv.paid > 0:  # rare here; test_every_confirmed_payment_of_a_closed_invoice_... makes it happen
            event("processing invoice closed holding a confirmed part payment")
        inv.move("closed")

    def _close_due(self, inv: InvoiceModel) -> bool:
        return (inv.status == "pending" and inv.expiry >= EXPIRED) or (
            inv.status == "processing" and inv.expiry == PAST_GRACE
        )

    def _pay(
        self, inv: InvoiceModel, code: str, amount: Decimal, outcome: str, respelled: bool = False
    ) -> PaymentModel:
        assert self.company is not None
        address, tag = _respelled(inv.code, inv.address, inv.tag) if respelled else (inv.address, inv.tag)
        tx = chain.pay_address(code, address, amount, tag=tag, outcome=outcome, company=self.company)
        deposit = Deposit.objects.get(code=code, txid=tx.txid)
        payment = PaymentModel(
            pk=deposit.pk,
            invoice_id=inv.id if code == inv.code else None,
            code=code,
            amount=amount,
            outcome=outcome,
        )
        self.payments.append(payment)
        if payment.invoice_id is not None:
            inv.payments.append(payment)
        self._seen(payment)
        return payment

    # --- rules ----------------------------------------------------------------------------------------

    @initialize(
        fee_percent=st.sampled_from([None, "0", "1", "2.5", "0.33"]),
        limits=st.dictionaries(
            st.sampled_from(CODES),
            st.tuples(
                st.sampled_from(["0", "0.000001", "0.0001", "0.5"]), st.sampled_from(["0", "0.5", "5"])
            ),
            max_size=3,
        ),
    )
    def merchant_settings(self, fee_percent: str | None, limits: dict[str, tuple[str, str]]) -> None:
        assert self.company is not None
        self.company.fee_percent = Decimal(fee_percent) if fee_percent is not None else None
        self.company.save(update_fields=["fee_percent"])
        if fee_percent is not None:
            self.fee_percent = Decimal(fee_percent)
        for code, (static, percentage) in limits.items():
            UnderpaymentLimit.objects.create(
                company=self.company, code=code, static=Decimal(static), percentage=Decimal(percentage)
            )
            self.limits[code] = (Decimal(static), Decimal(percentage))

    @initialize(
        currency=st.sampled_from(sorted(INVOICE_CURRENCIES)),
        price=st.integers(1, 10_000).map(Decimal),
        merchant_pays=st.booleans(),
        code=st.sampled_from(CODES),
        filled=st.sampled_from([True, True, False]),
    )
    def first_invoice(
        self, currency: str, price: Decimal, merchant_pays: bool, code: str, filled: bool
    ) -> None:
        # Swarm testing switches random rules off for a whole example; this keeps every example going.
        self.create(currency, price, [], merchant_pays, None)
        if filled:
            self.fill(0, code)

    @precondition(lambda self: len(self.invoices) < MAX_INVOICES)
    @rule(
        currency=st.sampled_from(sorted(INVOICE_CURRENCIES)),
        main=st.builds(lambda n, e: Decimal(n).scaleb(-e), st.integers(1, 30_000), st.integers(0, 9)),
        others=st.lists(
            st.builds(lambda n, e: Decimal(n).scaleb(-e), st.integers(-20_000, 20_000), st.integers(0, 9)),
            max_size=3,
        ),
        merchant_pays=st.booleans(),
        fixed=st.none() | st.sampled_from(CODES),
    )
    def create(
        self, currency: str, main: Decimal, others: list[Decimal], merchant_pays: bool, fixed: str | None
    ) -> None:
        assert self.company is not None
        prices = [main, *others]
        places = INVOICE_CURRENCIES[currency]
        rounded = [_rounded(price, places, ROUND_HALF_UP) for price in prices]
        total = sum(rounded, Decimal(0))
        before = Invoice.objects.count()

        try:
            invoice = invoice_create(
                company=self.company,
                invoice_currency=currency,
                items=[ItemInput(name=f"item {i}", price=price) for i, price in enumerate(prices)],
                is_merchant_pays_fee=merchant_pays,
                payment_currency=fixed,
            )
        except ValidationFailed as exc:
            assert total <= 0, f"refused a positive total {total}: {exc.errors}"
            assert [e.code for e in exc.errors] == ["total_not_positive"]
            assert Invoice.objects.count() == before
            event("create refused: total not positive")
            return

        assert total > 0, f"accepted a total of {total}"
        assert invoice.status == "created"
        assert invoice.total == total
        assert list(InvoiceItem.objects.filter(invoice=invoice).values_list("price", flat=True)) == rounded
        self.invoices.append(
            InvoiceModel(
                id=str(invoice.pk),
                currency=currency,
                total=total,
                merchant_pays=merchant_pays,
                fixed_code=fixed or "",
            )
        )

    @precondition(lambda self: self._has("created"))
    @rule(pick=st.integers(0, MAX_INVOICES - 1), code=st.none() | st.sampled_from(CODES))
    def fill(self, pick: int, code: str | None) -> None:
        inv = self._pick(pick, "created")
        chosen = inv.fixed_code or code

        if not chosen:
            with pytest.raises(ValidationFailed):
                invoice_fill(invoice_id=inv.id, client_email=EMAIL, payment_currency=code)
            return
        before = timezone.now()
        invoice = invoice_fill(invoice_id=inv.id, client_email=EMAIL, payment_currency=code)

        asset = get_asset(chosen)
        assert invoice.status == "pending"
        assert invoice.payment_code == chosen  # the merchant's fixed asset wins over the client's
        assert invoice.rate == _expected_rate(inv.currency, chosen)
        with localcontext(prec=100):
            converted = inv.total * invoice.rate
            fee = _rounded(converted * self.fee_percent / 100, asset.display_decimals, ROUND_UP)
            base = _rounded(converted, asset.display_decimals, ROUND_UP)
        assert invoice.fee == fee
        assert invoice.amount_due == (base if inv.merchant_pays else base + fee)
        assert invoice.amount_due > 0
        assert invoice.filled_at is not None and invoice.expired_at is not None
        assert invoice.filled_at >= before
        assert invoice.expired_at - invoice.filled_at == asset.invoice_lifetime
        address = invoice.deposit_address
        assert address is not None and address.code == chosen
        assert validate_address(chosen, address.address) == address.address
        assert bool(address.tag) == asset.tag_required
        inv.code, inv.address, inv.tag = chosen, address.address, address.tag
        inv.fee, inv.amount_due = invoice.fee, invoice.amount_due
        inv.move("pending")

    @precondition(lambda self: self._has(filled=True))
    @rule(
        pick=st.integers(0, MAX_INVOICES - 1),
        action=st.sampled_from(["proceed the same", "proceed with another asset", "accept", "refund"]),
    )
    def act_on_any(self, pick: int, action: str) -> None:
        """The client or the merchant acts on an invoice in whatever state: mostly refused or a no-op."""
        inv = self._pick(pick, filled=True)
        if action == "accept":
            self._accept(inv)
        elif action == "refund":
            self._refund(inv)
        else:
            self._proceed_again(inv, same=action == "proceed the same")

    def _proceed_again(self, inv: InvoiceModel, same: bool) -> None:
        other = next(code for code in CODES if code != inv.code)
        code = inv.code if same else other
        identical = same or bool(inv.fixed_code)  # a fixed asset ignores the client's choice

        if identical and inv.status == "pending":  # a double click: the same invoice, no new event
            invoice = invoice_fill(invoice_id=inv.id, client_email=EMAIL.upper(), payment_currency=code)
            assert invoice.status == "pending" and invoice.payment_code == inv.code
            assert invoice.deposit_address is not None and invoice.deposit_address.address == inv.address
        else:
            with pytest.raises(InvalidState):
                invoice_fill(invoice_id=inv.id, client_email=EMAIL, payment_currency=code)

    def _target(self, pick: int, anywhere: bool, *preferred: str) -> InvoiceModel:
        """A filled invoice, from the preferred statuses unless `anywhere` (or none is in them)."""
        if not anywhere and self._has(*preferred):
            return self._pick(pick, *preferred)
        return self._pick(pick, filled=True)

    def _pay_share(self, inv: InvoiceModel, share: str | int, outcome: str, respelled: bool = False) -> None:
        unit = _unit(inv.code)
        in_flight = sum(
            (p.amount for p in inv.payments if p.status in ("seen", "confirmed") and not p.is_late),
            Decimal(0),
        )
        # The least that completes the invoice, given the merchant's underpayment limit for the asset.
        limit = _rounded(
            inv.amount_due - self._tolerance(inv), get_asset(inv.code).display_decimals, ROUND_UP
        )
        raw = {
            "remainder": inv.amount_due - in_flight,
            "remainder short": inv.amount_due - in_flight - unit,
            "exact": inv.amount_due,
            "unit short": inv.amount_due - unit,
            "limit": limit,
            "under limit": limit - unit,
            "over": inv.amount_due + 7 * unit,
            "double": 2 * inv.amount_due,
            "tiny": unit,
        }.get(str(share))
        if raw is None:
            with localcontext(prec=100):
                raw = inv.amount_due * int(share) / 100
        amount = max(_rounded(raw, get_asset(inv.code).display_decimals, ROUND_DOWN), unit)
        if inv.status in FINAL:
            event(f"payment to a {inv.status} invoice")
        self._pay(inv, inv.code, amount, outcome, respelled)

    @precondition(lambda self: self._has(filled=True) and self._open_count() < MAX_OPEN_PAYMENTS)
    @rule(
        pick=st.integers(0, MAX_INVOICES - 1),
        late=st.sampled_from([False, False, True]),
        share=SHARES,
        outcome=OUTCOMES,
        respelled=st.booleans(),
    )
    def pay(self, pick: int, late: bool, share: str | int, outcome: str, respelled: bool) -> None:
        """A payment seen in the mempool; `late` lets it go to a final invoice too."""
        inv = self._target(pick, late, "pending", "processing", "wrong")
        self._pay_share(inv, share, outcome, respelled)

    @precondition(lambda self: self._has(filled=True))
    @rule(
        pick=st.integers(0, MAX_INVOICES - 1),
        late=st.sampled_from([False, False, True]),
        share=SHARES,
        outcome=OUTCOMES,
        respelled=st.booleans(),
    )
    def pay_and_mine(self, pick: int, late: bool, share: str | int, outcome: str, respelled: bool) -> None:
        """A payment mined at once to its required depth: done and wrong in fewer steps."""
        inv = self._target(pick, late, "pending", "processing", "wrong")
        self._pay_share(inv, share, outcome, respelled)
        self._mine([inv.code], get_asset(inv.code).confirmations)

    @precondition(lambda self: self._open_count() < MAX_OPEN_PAYMENTS - 1 and bool(self._staggerable()))
    @rule(pick=st.integers(0, MAX_INVOICES - 1), first=st.integers(1, 99), second=SHARES)
    def pay_in_two_blocks(self, pick: int, first: int, second: str | int) -> None:
        """A part payment reaches its confirmations while the next part is one block short: processing
        with a confirmed part, the state a close past the grace has to credit."""
        candidates = self._staggerable()
        inv = candidates[pick % len(candidates)]
        required = get_asset(inv.code).confirmations

        self._pay_share(inv, first, "confirm")
        self._mine([inv.code], 1)
        self._pay_share(inv, second, "confirm")
        self._mine([inv.code], required - 1)

    def _staggerable(self) -> list[InvoiceModel]:
        return [
            inv
            for inv in self.invoices
            if inv.status in ("pending", "processing") and get_asset(inv.code).confirmations > 1
        ]

    @precondition(
        lambda self: (
            any(SIBLINGS[inv.code] for inv in self.invoices if inv.code)
            and self._open_count() < MAX_OPEN_PAYMENTS
        )
    )
    @rule(pick=st.integers(0, MAX_INVOICES - 1), which=st.integers(0, 2))
    def pay_in_another_asset(self, pick: int, which: int) -> None:
        candidates = [inv for inv in self.invoices if inv.code and SIBLINGS[inv.code]]
        inv = candidates[pick % len(candidates)]
        siblings = SIBLINGS[inv.code]
        code = siblings[which % len(siblings)]

        amount = max(_rounded(inv.amount_due, get_asset(code).display_decimals, ROUND_DOWN), _unit(code))

        payment = self._pay(inv, code, amount, "confirm")

        assert Deposit.objects.get(pk=payment.pk).deposit_address_id is None  # never routed to the invoice

    @precondition(lambda self: any(p.status == "seen" for p in self.payments))
    @rule(
        pick=st.integers(0, 100),
        count=st.sampled_from([1, 2, 3, 5, 12, 20, 40]),
        everywhere=st.sampled_from([False] * 5 + [True]),
    )
    def mine(self, pick: int, count: int, everywhere: bool) -> None:
        open_codes = sorted({p.code for p in self.payments if p.status == "seen"})
        self._mine(CODES if everywhere else [open_codes[pick % len(open_codes)]], count, everywhere)

    def _mine(self, codes: list[str], count: int, everywhere: bool = False) -> None:
        if everywhere:
            chain.mine(None, count)
        else:
            for code in codes:
                chain.mine(code, count)

        for code in codes:
            for payment in self.payments:
                if payment.code == code and payment.block is None:
                    payment.block = self.tips[code] + 1
            self.tips[code] += count
            required = get_asset(code).confirmations
            for payment in self.payments:  # the chain is polled in transaction order
                if payment.code != code or payment.status != "seen" or payment.block is None:
                    continue
                if payment.outcome != "confirm":
                    payment.status = "failed" if payment.outcome == "fail" else "frozen"
                elif self.tips[code] - payment.block + 1 >= required:
                    payment.status = "confirmed"
                else:
                    continue
                self._settled(payment)

    @rule(
        pick=st.integers(0, MAX_INVOICES - 1),
        expiry=st.sampled_from([NOT_EXPIRED, NOT_EXPIRED, EXPIRED, PAST_GRACE]),
        sweep=st.booleans(),
    )
    def expire(self, pick: int, expiry: int, sweep: bool) -> None:
        """Time passes for one invoice (expiredAt moved into the past, maybe beyond the processing grace),
        then the periodic sweep runs, or the invoice's own expiry. Runnable in every state, so an example
        whose other rules swarm testing switched off still goes on."""
        inv = self._pick(pick, filled=True) if self._has(filled=True) else None
        if inv is not None and expiry != NOT_EXPIRED:
            grace = get_asset(inv.code).expiry_grace
            ago = timedelta(minutes=1) if expiry == EXPIRED else grace + timedelta(minutes=1)
            Invoice.objects.filter(pk=inv.id).update(expired_at=timezone.now() - ago)
            inv.expiry = expiry

        if sweep or inv is None:
            due = [other for other in self.invoices if self._close_due(other)]
            assert close_overdue_invoices() == len(due)
            for other in due:
                self._close(other)
        elif inv.status == "closed":
            assert invoice_close(invoice_id=inv.id).status == "closed"
        elif self._close_due(inv):
            assert invoice_close(invoice_id=inv.id).status == "closed"
            self._close(inv)
        else:  # not expired yet, or not in a status that expires
            with pytest.raises(InvalidState):
                invoice_close(invoice_id=inv.id)

    @precondition(
        lambda self: any(inv.status == "wrong" and not inv.open_payments() for inv in self.invoices)
    )
    @rule(pick=st.integers(0, MAX_INVOICES - 1), refund=st.booleans())
    def decide(self, pick: int, refund: bool) -> None:
        """The merchant accepts a wrong invoice, or declines it: a refund to the client's address."""
        candidates = [inv for inv in self.invoices if inv.status == "wrong" and not inv.open_payments()]
        inv = candidates[pick % len(candidates)]
        if refund:
            self._refund(inv)
        else:
            self._accept(inv)

    def _accept(self, inv: InvoiceModel) -> None:
        assert self.company is not None
        if inv.status == "wrong" and not inv.open_payments():
            assert invoice_accept(company=self.company, invoice_id=inv.id).status == "done"
            inv.move("done")
        elif inv.status == "done":  # a repeat changes nothing
            assert invoice_accept(company=self.company, invoice_id=inv.id).status == "done"
        else:
            with pytest.raises(InvalidState):
                invoice_accept(company=self.company, invoice_id=inv.id)

    def _refund(self, inv: InvoiceModel) -> None:
        assert self.company is not None
        address, tag = _refund_destination(inv.code)
        calls_before = len(refund_calls)

        if inv.status == "wrong" and not inv.open_payments():
            try:
                invoice = invoice_refund(company=self.company, invoice_id=inv.id, address=address, tag=tag)
            except ValidationFailed as exc:
                # Only the withdrawals app's handler may refuse (e.g. less than its network fee arrived); the
                # whole refund rolls back with it, which the invariants check. The recording one never does.
                assert not self.local_refunds, exc.errors
                event(f"refund refused by the withdrawals handler: {exc.code}")
                return
            assert invoice.status == "refunded"
            if self.local_refunds:
                assert refund_calls[calls_before:] == [(inv.id, address, tag, inv.paid, "wrong")]
            inv.move("refunded")
            return
        if inv.status == "refunded":  # a repeat changes nothing and sends nothing again
            invoice = invoice_refund(company=self.company, invoice_id=inv.id, address=address, tag=tag)
            assert invoice.status == "refunded"
        else:
            with pytest.raises(InvalidState):
                invoice_refund(company=self.company, invoice_id=inv.id, address=address, tag=tag)
        assert len(refund_calls) == calls_before

    # --- invariants -----------------------------------------------------------------------------------

    @invariant()
    def statuses_follow_the_model(self) -> None:
        rows = {
            str(pk): rest
            for pk, *rest in Invoice.objects.filter(pk__in=[inv.id for inv in self.invoices]).values_list(
                "pk", "status", "paid_amount", "credited_amount", "payment_code"
            )
        }
        assert len(rows) == len(self.invoices)
        for inv in self.invoices:
            status, paid, credited, code = rows[inv.id]
            assert status == inv.status, f"{inv.id}: {status}, model {inv.status} after {inv.path}"
            if status != inv.observed[-1]:
                assert inv.observed[-1] not in FINAL, f"{inv.id} left {inv.observed[-1]} for {status}"
                inv.observed.append(status)
            assert (paid, credited, code) == (inv.paid, inv.expected_credit(), inv.code), inv

    @invariant()
    def one_webhook_per_transition_in_order(self) -> None:
        paths: dict[str, list[str]] = defaultdict(list)
        events = WebhookEvent.objects.filter(company=self.company, family="invoice").order_by("created_at")
        for object_id, event_status, body in events.values_list("object_id", "event_status", "body"):
            payload = json.loads(body)
            assert payload["invoiceId"] == object_id and payload["status"] == event_status
            assert payload["message"]
            paths[object_id].append(payload["status"])
        assert set(paths) == {inv.id for inv in self.invoices}  # none for refused creations
        for inv in self.invoices:
            path = paths[inv.id]
            assert path == inv.path, f"{inv.id}: webhooks {path}, transitions {inv.path}"
            assert path[0] == "created"
            assert all(edge in LEGAL_EDGES for edge in itertools.pairwise(path)), path
            assert _is_subsequence(inv.observed, path), (inv.observed, path)

    @invariant()
    def deposits_follow_the_model(self) -> None:
        rows = {
            pk: (status, is_late, amount, routed)
            for pk, status, is_late, amount, routed in Deposit.objects.filter(
                pk__in=[p.pk for p in self.payments]
            ).values_list("pk", "status", "is_late", "amount", "deposit_address_id")
        }
        for payment in self.payments:
            status, is_late, amount, routed = rows[payment.pk]
            assert (status, is_late, amount) == (payment.status, payment.is_late, payment.amount), payment
            assert (routed is not None) == (payment.invoice_id is not None), payment

    @invariant()
    def ledger_credits_what_was_received(self) -> None:
        """Per invoice, INVOICE_CREDIT entries ("invoice:<id>", "deposit:<late deposit id>") add up to what
        its status says the merchant keeps; the balances are those credits, and the ledger verifies."""
        assert self.company is not None
        credits: dict[str, tuple[str, Decimal]] = {}
        posted: dict[str, Decimal] = defaultdict(Decimal)
        entries = LedgerEntry.objects.filter(
            account__company=self.company,
            kind__in=[LedgerEntry.Kind.INVOICE_CREDIT, LedgerEntry.Kind.WITHDRAWAL_POST],
        ).values_list("kind", "reference", "account__code", "available_delta", "held_delta")
        for kind, reference, code, available, held in entries:
            if kind == LedgerEntry.Kind.WITHDRAWAL_POST:  # a refund sent by the withdrawals app
                posted[code] -= held
                continue
            assert held == 0 and reference not in credits
            credits[reference] = (code, available)
        expected: dict[str, Decimal] = defaultdict(Decimal)
        for inv in self.invoices:
            received = Decimal(0)
            for reference in [f"invoice:{inv.id}"] + [f"deposit:{p.pk}" for p in inv.payments]:
                if reference in credits:
                    code, amount = credits.pop(reference)
                    assert code == inv.code, reference
                    received += amount
            assert received == inv.expected_credit(), f"{inv.id} ({inv.status}): credited {received}"
            if inv.code:
                expected[inv.code] += received
        assert credits == {}, f"credits no invoice explains: {credits}"  # e.g. a payment in another asset

        # The withdrawals app's refund holds what arrived (amount + network fee); its broadcast is enqueued
        # on commit, which never comes inside the test transaction, so nothing is posted either.
        held: dict[str, Decimal] = defaultdict(Decimal)
        if not self.local_refunds:
            for inv in self.invoices:
                if inv.status == "refunded":
                    held[inv.code] += inv.paid
        for row in balance_list_for_company(company=self.company):
            code = row["code"]
            assert row["available"] + row["held"] + posted[code] == expected[code], row
            assert (row["held"], posted[code]) == (held[code], 0), row
        assert ledger_verify() == []


def _is_subsequence(part: list[str], whole: list[str]) -> bool:
    rest = iter(whole)
    return all(item in rest for item in part)


@pytest.fixture(autouse=True)
def _lifecycle_world(merchant: Any) -> Any:
    """The merchant for the machine; a recording refund handler while withdrawals has not registered one."""
    InvoiceLifecycle.company = merchant.company
    local = not services.refund_handlers
    if local:
        services.refund_handlers.append(_record_refund)
    yield
    if local:
        services.refund_handlers.remove(_record_refund)
    InvoiceLifecycle.company = None


# The run is one unittest test; `django_db` gives it the test transaction the examples' savepoints nest in.
TestInvoiceLifecycle = pytest.mark.django_db(InvoiceLifecycle.TestCase)
TestInvoiceLifecycle.settings = hypothesis.settings(
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# --- regressions: bugs found while writing the machine (fixed in 627eaa6 and 1670dd9) ---------------------


@pytest.mark.django_db
def test_every_confirmed_payment_of_a_closed_invoice_reaches_the_merchants_balance(merchant: Any) -> None:
    company = merchant.company
    invoice = InvoiceFactory(company=company, items=[ItemInput("Boots", Decimal(100))], code="btc")
    assert invoice.deposit_address is not None
    address = invoice.deposit_address.address
    # btc needs 2 confirmations: the first part confirms while the second is still open, so no "wrong".
    chain.pay_address("btc", address, "0.0005", company=company)
    chain.mine("btc", 1)
    chain.pay_address("btc", address, "0.0002", company=company)
    chain.mine("btc", 1)
    Invoice.objects.filter(pk=invoice.pk).update(expired_at=timezone.now() - timedelta(minutes=61))
    close_overdue_invoices()
    chain.mine("btc", 1)  # the second part confirms after the close: credited, as late

    invoice.refresh_from_db()
    confirmed = sum(
        Deposit.objects.filter(deposit_address=invoice.deposit_address, status="confirmed").values_list(
            "amount", flat=True
        ),
        Decimal(0),
    )
    credited = sum(
        LedgerEntry.objects.filter(kind=LedgerEntry.Kind.INVOICE_CREDIT).values_list(
            "available_delta", flat=True
        ),
        Decimal(0),
    )
    assert invoice.status == "closed" and invoice.paid_amount == Decimal("0.0005")
    assert confirmed == Decimal("0.0007")
    assert credited == confirmed  # was 0.0002: the 0.0005 confirmed before the close was in no balance


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("code", "variant"),
    [
        ("eth", lambda address, tag: (address.lower(), tag)),  # all-lowercase EVM: valid (docs/decisions.md)
        ("ton", lambda address, tag: (_ton_form(address, is_bounceable=True), tag)),  # EQ... form
        ("ton", lambda address, tag: (_ton_form(address, is_user_friendly=False), tag)),  # raw 0:... form
        ("ton", lambda address, tag: (address, f" {tag} ")),  # derivation.py: the comment is stripped
    ],
    ids=["eth-lowercase", "ton-bounceable", "ton-raw", "ton-tag-with-spaces"],
)
def test_a_payment_to_another_form_of_the_invoice_address_reaches_the_invoice(
    merchant: Any, code: str, variant: Any
) -> None:
    company = merchant.company
    invoice = InvoiceFactory(company=company, items=[ItemInput("Boots", Decimal(100))], code=code)
    assert invoice.deposit_address is not None and invoice.amount_due is not None
    address, tag = variant(invoice.deposit_address.address, invoice.deposit_address.tag)

    tx = chain.pay_address(code, address, invoice.amount_due, tag=tag, company=company)

    deposit = Deposit.objects.get(txid=tx.txid)
    invoice.refresh_from_db()
    assert deposit.deposit_address_id == invoice.deposit_address_id  # was None: "to unknown address"
    assert invoice.status == "processing"
