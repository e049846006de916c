"""`ledger_hold_numbered` (payments.ledger.numbered): holds numbered from a counter row, written with the
caller's rows, in one transaction. A derivation counter stands in for the withdrawal uid counter and its
rows for the caller's (their key is text with the placeholder in it); the withdrawal's own use is tested
in withdrawals/tests (test_accept_fast_path, test_accept_statements, test_concurrency)."""

from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from payments.ledger import InsufficientBalance, Numbering, ledger_credit, ledger_hold_numbered, ledger_verify
from payments.ledger import numbered as forms
from payments.models import Account, DerivationCounter, LedgerEntry

pytestmark = pytest.mark.django_db

NUMBERING = Numbering(
    model=DerivationCounter,
    key_field="family",
    key="probe",
    field="next_index",
    prefix="P-",
    reference="w:{}",
)


@pytest.fixture
def company(merchant):
    return merchant.company


def _credit(company, amount, code="btc"):
    ledger_credit(
        company_id=company.pk,
        code=code,
        amount=Decimal(amount),
        kind=LedgerEntry.Kind.DEPOSIT_CREDIT,
        reference=f"deposit:{code}",
    )


def _balance(company, code="btc"):
    return Account.objects.filter(company=company, code=code).values_list("available", "held").first()


def _rows(placeholders):
    """The caller's rows: one per hold, its text made with the placeholder."""
    return [[DerivationCounter(family=f"r{placeholder}") for placeholder in placeholders]]


def _hold(company, holds):
    return ledger_hold_numbered(
        company_id=company.pk,
        holds=[(code, Decimal(amount)) for code, amount in holds],
        numbering=NUMBERING,
        rows=_rows,
    )


def _written():
    return sorted(DerivationCounter.objects.exclude(family="probe").values_list("family", flat=True))


def _counter():
    return DerivationCounter.objects.filter(family="probe").values_list("next_index", flat=True).first()


def test_several_codes_are_held_numbered_and_written_with_the_rows(company):
    _credit(company, "10")
    _credit(company, "5", code="eth")
    with transaction.atomic():
        numbered = _hold(company, [("eth", "1"), ("btc", "2")])
    assert numbered.texts == ["P-0", "P-1"]  # the counter row made at its first draw, from 0
    assert [(e.account.code, e.available_delta, e.held_delta, e.reference) for e in numbered.entries] == [
        ("eth", Decimal(-1), Decimal(1), "w:P-0"),
        ("btc", Decimal(-2), Decimal(2), "w:P-1"),
    ]
    assert all(entry.pk is not None for entry in numbered.entries)
    assert [row.family for row in numbered.rows[0]] == ["rP-0", "rP-1"]
    assert _written() == ["rP-0", "rP-1"]
    assert (_balance(company), _balance(company, "eth")) == (
        (Decimal(8), Decimal(2)),
        (Decimal(4), Decimal(1)),
    )
    assert _counter() == 2
    assert ledger_verify() == []


def test_every_short_code_is_named_and_nothing_is_written(company):
    _credit(company, "1")
    _credit(company, "1", code="eth")
    with pytest.raises(InsufficientBalance) as caught, transaction.atomic():
        _hold(company, [("trx", "1"), ("eth", "1"), ("btc", "2")])
    assert [s.code for s in caught.value.shortfalls] == ["btc", "trx"]
    assert _written() == [] and not _counter()
    assert (_balance(company), _balance(company, "eth")) == (
        (Decimal(1), Decimal(0)),
        (Decimal(1), Decimal(0)),
    )


@pytest.mark.django_db(transaction=True)
def test_in_autocommit_it_runs_in_a_transaction_of_its_own(company):
    _credit(company, "3")
    assert _hold(company, [("btc", "1")]).texts == ["P-0"]
    assert _hold(company, [("btc", "1")]).texts == ["P-1"]
    with pytest.raises(InsufficientBalance):
        _hold(company, [("btc", "2")])
    assert _written() == ["rP-0", "rP-1"] and _counter() == 2
    assert _balance(company) == (Decimal(1), Decimal(2))
    with pytest.raises(ValueError):
        _hold(company, [])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_hold_in_autocommit_is_one_statement_once_the_counter_exists(company):
    _credit(company, "3")
    _hold(
        company, [("btc", "1")]
    )  # the counter's first draw: the statement fails whole, the transaction makes it
    with CaptureQueriesContext(connection) as queries:
        numbered = _hold(company, [("btc", "1")])
    assert numbered.texts == ["P-1"] and numbered.entries[0].reference == "w:P-1"
    assert [row.family for row in numbered.rows[0]] == ["rP-1"]
    assert len(queries.captured_queries) == 1
    assert _written() == ["rP-0", "rP-1"] and _balance(company) == (Decimal(1), Decimal(2))
    assert ledger_verify() == []


@pytest.mark.postgres
@pytest.mark.parametrize("count", [1, 3])
def test_the_one_code_statement_writes_what_the_locking_form_writes(company, monkeypatch, count):
    _credit(company, "10")
    with transaction.atomic():
        fast = _hold(company, [("btc", "1")] * count)
    monkeypatch.setattr(forms, "_one_code", forms._locking)
    with transaction.atomic():
        locking = _hold(company, [("btc", "1")] * count)

    def shape(numbered):
        return [(e.account_id, e.kind, e.available_delta, e.held_delta) for e in numbered.entries]

    assert shape(fast) == shape(locking)
    assert [t for n in (fast, locking) for t in n.texts] == [f"P-{i}" for i in range(2 * count)]
    assert _balance(company) == (Decimal(10 - 2 * count), Decimal(2 * count))
    assert ledger_verify() == []
