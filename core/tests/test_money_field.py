"""Money columns order, compare, filter and sum as numbers on SQLite and PostgreSQL alike, exactly."""

from __future__ import annotations

from decimal import Decimal, localcontext
from types import SimpleNamespace

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Max, Min
from hypothesis import given
from hypothesis import strategies as st

from core.fields import MoneySum, decode_sortable, encode_sortable
from core.money import MONEY_CONTEXT
from payments.models import Account, LedgerEntry

VALUES = [
    "-999999999999999999.999999999999999999",
    "-10",
    "-9",
    "-0.5",
    "-0.000000000000000001",
    "0",
    "0.000000000000000001",
    "0.5",
    "9",
    "10",
    "100",
    "123456789012345678.123456789012345678",
]

money = st.decimals(
    min_value=Decimal("-999999999999999999.999999999999999999"),
    max_value=Decimal("999999999999999999.999999999999999999"),
    places=18,
    allow_nan=False,
    allow_infinity=False,
)


@given(st.lists(money, min_size=2, max_size=20))
def test_the_text_of_sqlite_sorts_as_the_numbers_and_reads_back_exactly(values):
    assert [decode_sortable(text) for text in sorted(encode_sortable(v) for v in values)] == sorted(values)


def test_plain_text_written_before_the_encoding_still_reads():
    assert decode_sortable("12.5") == Decimal("12.5")
    assert decode_sortable("-0.001") == Decimal("-0.001")


@pytest.fixture
def entries(merchant):
    """One ledger entry per value (available_delta), on the merchant's btc account."""
    account = Account.objects.create(company=merchant.company, code="btc")
    for number, value in enumerate(VALUES):
        LedgerEntry.objects.create(
            account=account,
            kind=LedgerEntry.Kind.ADJUSTMENT,
            available_delta=Decimal(value),
            held_delta=Decimal(0) if number % 2 else Decimal(value),
            reference=f"test:{number}",
        )
    return LedgerEntry.objects.filter(account=account)


def _values(query) -> list[Decimal]:  # type: ignore[no-untyped-def]
    return list(query.values_list("available_delta", flat=True))


@pytest.mark.django_db
def test_order_by_is_numeric(entries):
    assert _values(entries.order_by("available_delta")) == [Decimal(v) for v in VALUES]
    assert _values(entries.order_by("-available_delta")) == [Decimal(v) for v in reversed(VALUES)]


@pytest.mark.django_db
def test_min_and_max_are_numeric(entries):
    result = entries.aggregate(low=Min("available_delta"), high=Max("available_delta"))
    assert result == {"low": Decimal(VALUES[0]), "high": Decimal(VALUES[-1])}


@pytest.mark.django_db
def test_filters_compare_as_numbers(entries):
    assert sorted(_values(entries.filter(available_delta__gt=Decimal(9)))) == [
        Decimal("10"),
        Decimal("100"),
        Decimal("123456789012345678.123456789012345678"),
    ]
    assert len(_values(entries.filter(available_delta__lte=0))) == 6
    assert len(_values(entries.filter(available_delta__lt=Decimal("-0.5")))) == 3
    assert _values(entries.filter(available_delta__in=[Decimal("10"), Decimal("-9.0")])) in (
        [Decimal("-9"), Decimal("10")],
        [Decimal("10"), Decimal("-9")],
    )
    assert sorted(_values(entries.filter(available_delta__range=(Decimal("-1"), Decimal("1"))))) == [
        Decimal(v) for v in ("-0.5", "-0.000000000000000001", "0", "0.000000000000000001", "0.5")
    ]
    assert _values(entries.filter(available_delta=Decimal("0.50"))) == [Decimal("0.5")]


@pytest.mark.django_db
def test_two_money_columns_compare_as_numbers(entries):
    # held_delta equals available_delta on even rows and is 0 on odd ones.
    greater = entries.filter(available_delta__gt=F("held_delta")).order_by("available_delta")
    assert _values(greater) == [Decimal(v) for v in ("0.5", "10", "123456789012345678.123456789012345678")]


@pytest.mark.django_db
def test_money_sum_is_exact(entries, merchant):
    with localcontext(MONEY_CONTEXT):
        total = sum((Decimal(v) for v in VALUES), Decimal(0))
    assert entries.aggregate(total=MoneySum("available_delta"))["total"] == total
    account = Account.objects.create(company=merchant.company, code="eth")
    for number, value in enumerate(["0.1", "0.2", "0.000000000000000003"]):
        LedgerEntry.objects.create(
            account=account,
            kind=LedgerEntry.Kind.ADJUSTMENT,
            available_delta=Decimal(value),
            held_delta=Decimal(0),
            reference=f"eth:{number}",
        )
    sums = Account.objects.filter(pk=account.pk).aggregate(total=MoneySum("entries__available_delta"))
    assert sums["total"] == Decimal("0.300000000000000003")
    assert LedgerEntry.objects.none().aggregate(total=MoneySum("available_delta"))["total"] is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("available", "allowed"),
    [
        ("0", True),
        ("0.000000000000000001", True),
        ("-0.000000000000000001", False),
        ("-999999999999999999.999999999999999999", False),
    ],
)
def test_check_constraints_see_the_sign(merchant, available, allowed):
    attempt = Account(company=merchant.company, code="ltc", available=Decimal(available))
    if allowed:
        attempt.save()
        assert Account.objects.get(pk=attempt.pk).available == Decimal(available)
    else:
        with pytest.raises(IntegrityError), transaction.atomic():
            attempt.save()


@pytest.mark.django_db
def test_sqlite_stores_the_sortable_text(merchant):
    account = Account.objects.create(company=merchant.company, code="bch", available=Decimal("12.5"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT available FROM payments_account WHERE id = %s", [account.pk])
        (raw,) = cursor.fetchone()
    if connection.vendor == "sqlite":
        assert raw == "000000000000000012.500000000000000000"
    else:
        assert raw == Decimal("12.5")


@pytest.mark.django_db
def test_the_migration_rewrites_plain_text_rows_and_back(merchant):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("payments.migrations.0005_money_sortable_text")
    account = Account.objects.create(company=merchant.company, code="trx", available=Decimal("12.5"))
    if connection.vendor == "sqlite":  # a row as the previous release wrote it
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE payments_account SET available = '12.5', held = '0' WHERE id = %s", [account.pk]
            )

    editor = SimpleNamespace(connection=connection)  # the migration uses only its connection
    migration.to_sortable(apps, editor)

    assert Account.objects.filter(available__gt=Decimal("9.99")).get() == account
    assert Account.objects.get(pk=account.pk).available == Decimal("12.5")
    migration.to_plain(apps, editor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT available FROM payments_account WHERE id = %s", [account.pk])
        (raw,) = cursor.fetchone()
    assert Decimal(raw) == Decimal("12.5")  # "12.5" on SQLite, numeric on PostgreSQL: both read back
