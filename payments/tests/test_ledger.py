"""The ledger: credits, holds, releases and posts; idempotency; all-or-nothing bulk holds; the invariant."""

import random
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, NotSupportedError, connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from core.errors import UnsupportedAsset
from payments.ledger import (
    InsufficientBalance,
    Shortfall,
    account_for_update,
    ledger_credit,
    ledger_hold,
    ledger_hold_many,
    ledger_post,
    ledger_release,
    ledger_verify,
)
from payments.ledger._statement import AfterHold, hold_fresh
from payments.models import Account, DerivationCounter, LedgerEntry
from tests.workers import run_together

pytestmark = pytest.mark.django_db

Kind = LedgerEntry.Kind


def _credit(company, amount, reference="deposit:1", code="btc", kind=Kind.DEPOSIT_CREDIT):
    return ledger_credit(
        company_id=company.pk, code=code, amount=Decimal(amount), kind=kind, reference=reference
    )


def _hold(company, amount, reference="withdrawal:001-1", code="btc"):
    return ledger_hold(company_id=company.pk, code=code, amount=Decimal(amount), reference=reference)


def _release(company, amount, reference="withdrawal:001-1", code="btc"):
    return ledger_release(company_id=company.pk, code=code, amount=Decimal(amount), reference=reference)


def _post(company, amount, reference="withdrawal:001-1", code="btc"):
    return ledger_post(company_id=company.pk, code=code, amount=Decimal(amount), reference=reference)


def _balance(company, code="btc"):
    account = Account.objects.filter(company=company, code=code).first()
    if account is None:
        return None
    return account.available, account.held


def _deltas(company, code="btc"):
    return list(
        LedgerEntry.objects.filter(account__company=company, account__code=code)
        .order_by("pk")
        .values_list("kind", "available_delta", "held_delta", "reference")
    )


@pytest.fixture
def company(merchant):
    return merchant.company


@pytest.fixture
def other(other_merchant):
    return other_merchant.company


# --- Credit ---------------------------------------------------------------------------------------------


def test_credit_adds_to_available_and_appends_one_entry(company):
    entry = _credit(company, "0.015", reference="deposit:7")

    assert _balance(company) == (Decimal("0.015"), Decimal(0))
    assert _deltas(company) == [(Kind.DEPOSIT_CREDIT, Decimal("0.015"), Decimal(0), "deposit:7")]
    assert entry.account.code == "btc"


def test_credits_accumulate_on_one_account_per_company_and_code(company, other):
    _credit(company, "1", reference="deposit:1")
    _credit(company, "2.5", reference="deposit:2", kind=Kind.INVOICE_CREDIT)
    _credit(company, "3", reference="deposit:3", code="eth")
    _credit(other, "4", reference="deposit:4")

    assert _balance(company) == (Decimal("3.5"), Decimal(0))
    assert _balance(company, "eth") == (Decimal(3), Decimal(0))
    assert _balance(other) == (Decimal(4), Decimal(0))
    assert Account.objects.count() == 3


def test_credit_normalises_the_code(company):
    entry = _credit(company, "1", code=" TRC20USDT ")

    assert entry.account.code == "trc20usdt"
    assert _balance(company, "trc20usdt") == (Decimal(1), Decimal(0))


def test_replayed_credit_with_the_same_reference_changes_nothing(company):
    first = _credit(company, "1.5", reference="deposit:42")

    replay = _credit(company, "1.5", reference="deposit:42")

    assert replay.pk == first.pk
    assert _balance(company) == (Decimal("1.5"), Decimal(0))
    assert len(_deltas(company)) == 1


def test_replayed_credit_with_another_amount_is_refused_and_changes_nothing(company):
    _credit(company, "1.5", reference="deposit:42")

    with pytest.raises(ValueError, match="already written"):
        _credit(company, "2", reference="deposit:42")

    assert _balance(company) == (Decimal("1.5"), Decimal(0))
    assert len(_deltas(company)) == 1


def test_the_same_reference_under_another_credit_kind_is_another_credit(company):
    _credit(company, "1", reference="x:1", kind=Kind.DEPOSIT_CREDIT)

    _credit(company, "1", reference="x:1", kind=Kind.ADJUSTMENT)

    assert _balance(company) == (Decimal(2), Decimal(0))


@pytest.mark.parametrize("kind", [Kind.WITHDRAWAL_HOLD, Kind.WITHDRAWAL_POST, "gift"])
def test_credit_refuses_a_kind_that_is_not_a_credit(company, kind):
    with pytest.raises(ValueError, match="not a credit kind"):
        _credit(company, "1", kind=kind)

    assert _balance(company) is None


@pytest.mark.parametrize(
    ("amount", "code"),
    [
        (Decimal(0), "btc"),
        (Decimal("-1"), "btc"),
        (Decimal("0.000000001"), "btc"),  # 9 places; btc has 8
        (Decimal("0.0000001"), "trc20usdt"),  # 7 places; usdt has 6
        (Decimal("0.0000000000000000001"), "near"),  # near has 24 on chain, the columns 18
        (Decimal("NaN"), "btc"),
        (Decimal("Infinity"), "btc"),
        (Decimal("1E+18"), "btc"),  # 19 integer digits do not fit the columns
        (1.5, "btc"),
        (1, "btc"),
        (True, "btc"),
        ("1", "btc"),
    ],
)
def test_bad_amounts_are_refused_before_anything_is_written(company, amount, code):
    with pytest.raises(ValueError):
        ledger_credit(
            company_id=company.pk, code=code, amount=amount, kind=Kind.DEPOSIT_CREDIT, reference="d:1"
        )

    assert not Account.objects.exists()
    assert not LedgerEntry.objects.exists()


def test_amount_with_the_assets_full_places_is_accepted(company):
    _credit(company, "0.00000001")

    assert _balance(company) == (Decimal("0.00000001"), Decimal(0))


@pytest.mark.parametrize("reference", ["", "   ", "x" * 101])
def test_empty_or_overlong_reference_is_refused(company, reference):
    with pytest.raises(ValueError):
        _credit(company, "1", reference=reference)

    assert not LedgerEntry.objects.exists()


def test_unknown_code_is_an_unsupported_asset(company):
    with pytest.raises(UnsupportedAsset):
        _credit(company, "1", code="doge")

    assert not Account.objects.exists()


# --- Hold, release, post --------------------------------------------------------------------------------


def test_hold_moves_available_to_held(company):
    _credit(company, "10")

    entry = _hold(company, "2.5", reference="withdrawal:001-1")

    assert _balance(company) == (Decimal("7.5"), Decimal("2.5"))
    assert (entry.kind, entry.available_delta, entry.held_delta) == (
        Kind.WITHDRAWAL_HOLD,
        Decimal("-2.5"),
        Decimal("2.5"),
    )


def test_hold_of_the_whole_available_balance_is_allowed(company):
    _credit(company, "3")

    _hold(company, "3")

    assert _balance(company) == (Decimal(0), Decimal(3))


def test_hold_beyond_available_raises_and_writes_nothing(company):
    _credit(company, "1.5")
    _hold(company, "1", reference="withdrawal:001-1")

    with pytest.raises(InsufficientBalance) as caught:
        _hold(company, "0.6", reference="withdrawal:001-2")

    assert caught.value.code == "insufficient_balance"
    assert caught.value.status == 400
    assert caught.value.detail == "Insufficient balance: btc available 0.5, requested 0.6."
    assert _balance(company) == (Decimal("0.5"), Decimal(1))
    assert len(_deltas(company)) == 2


def test_hold_on_a_code_never_credited_raises_and_leaves_no_account(company):
    with pytest.raises(InsufficientBalance, match="eth available 0, requested 1"):
        _hold(company, "1", code="eth")

    assert _balance(company, "eth") is None


def test_hold_does_not_spend_another_companys_balance(company, other):
    _credit(other, "5")

    with pytest.raises(InsufficientBalance):
        _hold(company, "1")

    assert _balance(other) == (Decimal(5), Decimal(0))


def test_replayed_hold_returns_the_first_entry_and_holds_once(company):
    _credit(company, "10")
    first = _hold(company, "4")

    replay = _hold(company, "4")

    assert replay.pk == first.pk
    assert _balance(company) == (Decimal(6), Decimal(4))


def test_release_moves_held_back_to_available(company):
    _credit(company, "10")
    _hold(company, "4")

    entry = _release(company, "4")

    assert _balance(company) == (Decimal(10), Decimal(0))
    assert (entry.kind, entry.available_delta, entry.held_delta) == (
        Kind.WITHDRAWAL_RELEASE,
        Decimal(4),
        Decimal(-4),
    )


def test_post_takes_the_held_amount_out(company):
    _credit(company, "10")
    _hold(company, "4")

    entry = _post(company, "4")

    assert _balance(company) == (Decimal(6), Decimal(0))
    assert (entry.kind, entry.available_delta, entry.held_delta) == (
        Kind.WITHDRAWAL_POST,
        Decimal(0),
        Decimal(-4),
    )


def test_full_cycle_writes_one_entry_per_change(company):
    _credit(company, "10", reference="deposit:1")
    _hold(company, "3", reference="w:1")
    _hold(company, "2", reference="w:2")
    _post(company, "3", reference="w:1")
    _release(company, "2", reference="w:2")

    deltas = _deltas(company)

    assert deltas == [
        (Kind.DEPOSIT_CREDIT, Decimal(10), Decimal(0), "deposit:1"),
        (Kind.WITHDRAWAL_HOLD, Decimal(-3), Decimal(3), "w:1"),
        (Kind.WITHDRAWAL_HOLD, Decimal(-2), Decimal(2), "w:2"),
        (Kind.WITHDRAWAL_POST, Decimal(0), Decimal(-3), "w:1"),
        (Kind.WITHDRAWAL_RELEASE, Decimal(2), Decimal(-2), "w:2"),
    ]
    assert _balance(company) == (Decimal(7), Decimal(0))


@pytest.mark.parametrize("settle", [_release, _post])
def test_replayed_settlement_changes_nothing(company, settle):
    _credit(company, "10")
    _hold(company, "4")
    first = settle(company, "4")
    before = _balance(company)

    replay = settle(company, "4")

    assert replay.pk == first.pk
    assert _balance(company) == before
    assert len(_deltas(company)) == 3


@pytest.mark.parametrize(("settle", "then"), [(_release, _post), (_post, _release)])
def test_a_hold_is_settled_only_once(company, settle, then):
    _credit(company, "10")
    _hold(company, "4", reference="w:1")
    _hold(company, "4", reference="w:2")  # enough held for a second settlement to go unnoticed by the CHECK
    settle(company, "4", reference="w:1")
    before = _balance(company)

    with pytest.raises(ValueError, match="already settled"):
        then(company, "4", reference="w:1")

    assert _balance(company) == before


@pytest.mark.parametrize("settle", [_release, _post])
def test_settling_without_a_matching_hold_is_refused(company, settle):
    _credit(company, "10")
    _hold(company, "4", reference="w:1")

    with pytest.raises(ValueError, match="No hold"):
        settle(company, "4", reference="w:unknown")
    with pytest.raises(ValueError, match="No hold"):
        settle(company, "3", reference="w:1")

    assert _balance(company) == (Decimal(6), Decimal(4))


# --- Bulk holds -----------------------------------------------------------------------------------------


def test_hold_many_holds_every_item_and_returns_entries_in_order(company):
    _credit(company, "10", code="btc")
    _credit(company, "5", code="eth")

    entries = ledger_hold_many(
        company_id=company.pk,
        holds=[
            ("eth", Decimal("1"), "w:1"),
            ("BTC", Decimal("2"), "w:2"),
            ("eth", Decimal("1.5"), "w:3"),
        ],
    )

    assert [(e.account.code, e.held_delta, e.reference) for e in entries] == [
        ("eth", Decimal(1), "w:1"),
        ("btc", Decimal(2), "w:2"),
        ("eth", Decimal("1.5"), "w:3"),
    ]
    assert all(entry.pk is not None for entry in entries)
    assert _balance(company, "btc") == (Decimal(8), Decimal(2))
    assert _balance(company, "eth") == (Decimal("2.5"), Decimal("2.5"))
    assert ledger_verify() == []


def test_hold_many_is_all_or_nothing_when_one_code_is_short(company):
    _credit(company, "10", code="btc")
    _credit(company, "1", code="eth")

    with pytest.raises(InsufficientBalance) as caught:
        ledger_hold_many(
            company_id=company.pk,
            holds=[
                ("btc", Decimal("2"), "w:1"),
                ("eth", Decimal("0.6"), "w:2"),
                ("eth", Decimal("0.6"), "w:3"),
            ],
        )

    assert caught.value.detail == "Insufficient balance: eth available 1, requested 1.2."
    assert [(s.code, s.available, s.requested) for s in caught.value.shortfalls] == [
        ("eth", Decimal(1), Decimal("1.2"))
    ]
    assert _balance(company, "btc") == (Decimal(10), Decimal(0))
    assert _balance(company, "eth") == (Decimal(1), Decimal(0))
    assert not LedgerEntry.objects.filter(kind=Kind.WITHDRAWAL_HOLD).exists()


def test_hold_many_names_every_short_code(company):
    _credit(company, "1", code="btc")

    with pytest.raises(InsufficientBalance) as caught:
        ledger_hold_many(
            company_id=company.pk,
            holds=[("trx", Decimal("10"), "w:1"), ("btc", Decimal("2"), "w:2")],
        )

    assert [s.code for s in caught.value.shortfalls] == ["btc", "trx"]
    assert "btc available 1, requested 2" in caught.value.detail
    assert "trx available 0, requested 10" in caught.value.detail


def test_hold_many_of_1000_items_writes_1000_entries(company, django_assert_max_num_queries):
    _credit(company, "1000", code="trc20usdt")
    _credit(company, "1", code="btc")
    holds = [("trc20usdt", Decimal("0.5"), f"w:{i}") for i in range(990)]
    holds += [("btc", Decimal("0.01"), f"w:{i}") for i in range(990, 1000)]

    # Not one query per item: locks, one read of earlier holds, one update per account, batched inserts.
    with django_assert_max_num_queries(16):  # 8 on PostgreSQL; SQLite inserts in batches of 166 rows
        entries = ledger_hold_many(company_id=company.pk, holds=holds)

    assert len(entries) == 1000
    assert LedgerEntry.objects.filter(kind=Kind.WITHDRAWAL_HOLD).count() == 1000
    assert _balance(company, "trc20usdt") == (Decimal(505), Decimal(495))
    assert _balance(company, "btc") == (Decimal("0.9"), Decimal("0.1"))
    assert ledger_verify() == []


def test_replayed_hold_many_returns_the_same_entries_and_holds_once(company):
    _credit(company, "10")
    holds = [("btc", Decimal(1), "w:1"), ("btc", Decimal(2), "w:2")]
    first = ledger_hold_many(company_id=company.pk, holds=holds)

    replay = ledger_hold_many(company_id=company.pk, holds=[*holds, ("btc", Decimal(3), "w:3")])

    assert [e.pk for e in replay[:2]] == [e.pk for e in first]
    assert _balance(company) == (Decimal(4), Decimal(6))


def test_hold_many_refuses_a_reference_twice_in_one_batch(company):
    _credit(company, "10")

    with pytest.raises(ValueError, match="twice"):
        ledger_hold_many(
            company_id=company.pk, holds=[("btc", Decimal(1), "w:1"), ("btc", Decimal(2), "w:1")]
        )

    assert _balance(company) == (Decimal(10), Decimal(0))


def test_hold_many_of_nothing_writes_nothing(company):
    entries = ledger_hold_many(company_id=company.pk, holds=[])

    assert entries == []
    assert not Account.objects.exists()


# --- Accounts and the database's own guards -------------------------------------------------------------


def test_account_for_update_creates_the_account_once(company):
    with transaction.atomic():
        first = account_for_update(company_id=company.pk, code="ETH")
    with transaction.atomic():
        again = account_for_update(company_id=company.pk, code="eth")

    assert first.pk == again.pk
    assert (again.code, again.available, again.held) == ("eth", Decimal(0), Decimal(0))


@pytest.mark.django_db(transaction=True)  # no test-wide transaction: the call runs in autocommit
def test_account_for_update_outside_a_transaction_is_refused(company):
    with pytest.raises(transaction.TransactionManagementError):
        account_for_update(company_id=company.pk, code="btc")

    assert not Account.objects.exists()


def test_database_refuses_available_below_zero(company):
    account = _credit(company, "5").account

    with pytest.raises(IntegrityError), transaction.atomic():
        Account.objects.filter(pk=account.pk).update(available=F("available") - 1000)

    assert _balance(company) == (Decimal(5), Decimal(0))


def test_database_refuses_held_below_zero(company):
    _credit(company, "5")
    account = _hold(company, "2").account

    with pytest.raises(IntegrityError), transaction.atomic():
        Account.objects.filter(pk=account.pk).update(held=F("held") - 1000)

    assert _balance(company) == (Decimal(3), Decimal(2))


def test_database_refuses_a_second_entry_with_the_same_kind_and_reference(company):
    entry = _credit(company, "5", reference="deposit:1")

    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.create(
            account=entry.account,
            kind=Kind.DEPOSIT_CREDIT,
            available_delta=Decimal(5),
            held_delta=Decimal(0),
            reference="deposit:1",
        )


# --- Verification ---------------------------------------------------------------------------------------


def test_ledger_verify_is_clean_after_operations(company, other):
    _credit(company, "10")
    _credit(other, "3", code="ton")
    _hold(company, "4", reference="w:1")
    _hold(company, "1", reference="w:2")
    _release(company, "4", reference="w:1")
    _post(company, "1", reference="w:2")
    with transaction.atomic():
        account_for_update(company_id=company.pk, code="sol")  # an account without entries

    problems = ledger_verify()

    assert problems == []


def test_ledger_verify_reports_a_tampered_account(company, other):
    _credit(company, "10")
    _credit(other, "3")
    tampered = Account.objects.get(company=company, code="btc")
    Account.objects.filter(pk=tampered.pk).update(available=Decimal("11.5"))

    problems = ledger_verify()

    assert problems == [
        f"account {tampered.pk} (company {company.pk}, btc): available 11.5 != entries 10",
    ]


def test_ledger_verify_reports_held_and_an_account_without_entries(company):
    with transaction.atomic():
        account = account_for_update(company_id=company.pk, code="eth")
    Account.objects.filter(pk=account.pk).update(available=Decimal(1), held=Decimal(2))

    problems = ledger_verify()

    assert problems == [
        f"account {account.pk} (company {company.pk}, eth): available 1 != entries 0, held 2 != entries 0",
    ]


def test_ledger_verify_makes_a_fixed_number_of_queries_whatever_the_number_of_accounts(
    company, other, django_assert_num_queries
):
    for code in ("btc", "eth", "ton", "sol"):
        _credit(company, "1", code=code)
        _credit(other, "1", code=code)

    # One aggregate query on both databases (MoneySum is exact on SQLite too).
    with django_assert_num_queries(1):
        problems = ledger_verify()

    assert problems == []


def _ledger_check():
    out = StringIO()
    call_command("ledger_check", stdout=out)
    return out.getvalue()


def test_ledger_check_says_ok_with_the_number_of_accounts(company):
    _credit(company, "1", code="btc")
    _credit(company, "1", code="eth")

    out = _ledger_check()

    assert out.strip() == "ledger OK: 2 accounts checked"


def test_ledger_check_prints_each_mismatch_and_fails(company):
    _credit(company, "1", code="btc")
    _credit(company, "1", code="eth")
    Account.objects.filter(company=company).update(held=Decimal(1))
    out = StringIO()

    with pytest.raises(CommandError, match="2 account"):
        call_command("ledger_check", stdout=out)

    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert all("held 1 != entries 0" in line for line in lines)


# --- Concurrency (PostgreSQL: real row locks) -----------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_credits_and_holds_keep_the_account_equal_to_its_entries(company):
    _credit(company, "10", reference="deposit:seed")
    credits = [lambda i=i: _credit(company, "1", reference=f"deposit:{i}") for i in range(30)]
    holds = [lambda i=i: _hold(company, "2", reference=f"withdrawal:{i}") for i in range(20)]
    operations = [*(("credit", op) for op in credits), *(("hold", op) for op in holds)]
    random.Random(7).shuffle(operations)

    outcomes = run_together([op for _, op in operations])

    kinds = [kind for kind, _ in operations]
    failures = [o for o in outcomes if isinstance(o, Exception)]
    assert all(isinstance(o, InsufficientBalance) for o in failures), failures
    assert all(kind == "hold" for kind, o in zip(kinds, outcomes, strict=True) if isinstance(o, Exception))
    # Each refusal was right for the balance it saw under the lock.
    assert all(f.shortfalls[0].available < 2 for f in failures)
    successful_holds = sum(
        1 for kind, o in zip(kinds, outcomes, strict=True) if kind == "hold" and isinstance(o, LedgerEntry)
    )
    assert successful_holds + len(failures) == 20
    assert _balance(company) == (Decimal(10 + 30 - 2 * successful_holds), Decimal(2 * successful_holds))
    assert len(_deltas(company)) == 1 + 30 + successful_holds
    assert ledger_verify() == []
    # Replayed in commit order (ids are taken under the lock), the balance never went below zero.
    running = Decimal(0)
    for _, available_delta, _, _ in _deltas(company):
        running += available_delta
        assert running >= 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_first_credits_create_one_account(company):
    operations = [lambda i=i: _credit(company, "1", reference=f"deposit:{i}", code="sol") for i in range(10)]

    outcomes = run_together(operations)

    assert all(isinstance(o, LedgerEntry) for o in outcomes), outcomes
    assert Account.objects.filter(company=company, code="sol").count() == 1
    assert _balance(company, "sol") == (Decimal(10), Decimal(0))
    assert ledger_verify() == []


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_deposit_replayed_concurrently_credits_once(company):
    # The account exists already, so only its row lock (not the creation race) serialises the replays.
    _credit(company, "5", reference="deposit:seed", code="ton")
    operations = [lambda: _credit(company, "1", reference="deposit:same", code="ton") for _ in range(10)]

    outcomes = run_together(operations)

    assert all(isinstance(o, LedgerEntry) for o in outcomes), outcomes
    assert len({o.pk for o in outcomes}) == 1
    assert _balance(company, "ton") == (Decimal(6), Decimal(0))
    assert ledger_verify() == []


@pytest.mark.django_db
def test_money_keeps_all_36_digits_in_the_database(merchant):
    from payments.models import Account

    amount = Decimal("123456789012345678.123456789012345678")
    with transaction.atomic():
        ledger_credit(
            company_id=merchant.company.pk, code="eth", amount=amount, kind="adjustment", reference="big"
        )

    stored = Account.objects.get(company=merchant.company, code="eth").available

    assert stored == amount
    assert ledger_verify() == []


def test_hold_many_uses_the_accounts_its_caller_locked_and_refuses_anothers(company):
    from tests.factories import CompanyFactory

    _credit(company, "10")
    with transaction.atomic():
        locked = {"btc": account_for_update(company_id=company.pk, code="btc")}
        with CaptureQueriesContext(connection) as queries:
            ledger_hold_many(company_id=company.pk, holds=[("btc", Decimal(1), "w:1")], locked=locked)
    assert not [q for q in queries.captured_queries if "FOR UPDATE" in q["sql"]]  # not locked twice
    assert _balance(company) == (Decimal(9), Decimal(1))

    other = CompanyFactory()
    _credit(other, "10")
    with pytest.raises(ValueError, match="not company"), transaction.atomic():
        locked = {"btc": account_for_update(company_id=other.pk, code="btc")}
        ledger_hold_many(company_id=company.pk, holds=[("btc", Decimal(1), "w:2")], locked=locked)
    assert _balance(company) == (Decimal(9), Decimal(1))


# --- hold_fresh (payments.ledger._statement): the one-code hold as one statement, PostgreSQL ----------

# A caller's one-row update to run after the hold: a derivation counter stands in for the withdrawal one.
_BUMP = AfterHold(
    '"payments_derivationcounter"', '"next_index" = "next_index" + %s', '"family" = %s', '"next_index"'
)


def _hold_fresh(company, amounts, code="btc", family="probe"):
    return hold_fresh(
        company_id=company.pk,
        code=code,
        amounts=[Decimal(a) for a in amounts],
        after=_BUMP,
        after_params=[len(amounts), family],
    )


def _index(family="probe"):
    return DerivationCounter.objects.filter(family=family).values_list("next_index", flat=True).first()


@pytest.mark.postgres
def test_hold_fresh_holds_the_sum_and_makes_the_callers_update_in_one_statement(company):
    _credit(company, "10")
    DerivationCounter.objects.create(family="probe", next_index=5)
    with transaction.atomic():
        with CaptureQueriesContext(connection) as queries:
            hold = _hold_fresh(company, ["1", "2.5"])
        assert len(queries.captured_queries) == 1
        assert hold.after == 7
        account = Account.objects.get(company=company, code="btc")
        assert [(e.account_id, e.kind, e.available_delta, e.held_delta, e.pk) for e in hold.entries] == [
            (account.pk, Kind.WITHDRAWAL_HOLD, Decimal(-1), Decimal(1), None),
            (account.pk, Kind.WITHDRAWAL_HOLD, Decimal("-2.5"), Decimal("2.5"), None),
        ]
        assert ledger_verify() != []  # the balance moved; the entries are the caller's to write
        LedgerEntry.objects.bulk_create(hold.unwritten(["withdrawal:001-6", "withdrawal:001-7"]))
    assert _balance(company) == (Decimal("6.5"), Decimal("3.5"))
    assert sorted(
        LedgerEntry.objects.filter(kind=Kind.WITHDRAWAL_HOLD).values_list("reference", flat=True)
    ) == [
        "withdrawal:001-6",
        "withdrawal:001-7",
    ]
    assert _index() == 7
    assert ledger_verify() == []


@pytest.mark.postgres
@pytest.mark.parametrize("code", ["btc", "eth"], ids=["short", "no account"])
def test_hold_fresh_refuses_a_short_balance_having_changed_nothing(company, code):
    _credit(company, "3")
    DerivationCounter.objects.create(family="probe", next_index=5)
    before = _balance(company)

    with transaction.atomic():
        with pytest.raises(InsufficientBalance) as caught:
            _hold_fresh(company, ["1", "2.5"], code=code)
        # Refused as ledger_hold_many refuses: the code, the locked balance, the sum asked for.
        assert caught.value.shortfalls == [
            Shortfall(code, Decimal(3 if code == "btc" else 0), Decimal("3.5"))
        ]
        assert _index() == 5  # the caller's update did not run
        assert _balance(company) == before
    assert not Account.objects.filter(company=company, code="eth").exists()
    assert not LedgerEntry.objects.filter(kind=Kind.WITHDRAWAL_HOLD).exists()


@pytest.mark.postgres
def test_hold_fresh_holds_when_the_callers_row_is_missing(company):
    _credit(company, "3")
    with transaction.atomic():
        hold = _hold_fresh(company, ["1"])
        LedgerEntry.objects.bulk_create(hold.unwritten(["withdrawal:001-1"]))
    assert hold.after is None
    assert _balance(company) == (Decimal(2), Decimal(1))
    assert ledger_verify() == []


@pytest.mark.postgres
def test_hold_fresh_locks_and_tries_again_when_the_balance_grew_since_its_update_looked(company, monkeypatch):
    """The update found the balance short; a credit committed before the refusal read it: with the lock
    taken, the balance is enough and the hold is made rather than refused with an amount that covers it."""
    from payments.ledger import _statement as holds

    _credit(company, "3")
    real, runs = holds._run, []

    def short_at_first(db, statement, params):
        runs.append(statement)
        return (None, None) if len(runs) == 1 else real(db, statement, params)

    monkeypatch.setattr(holds, "_run", short_at_first)
    with transaction.atomic():
        with CaptureQueriesContext(connection) as queries:
            hold = _hold_fresh(company, ["1"])
        LedgerEntry.objects.bulk_create(hold.unwritten(["withdrawal:001-1"]))
    assert len(runs) == 2
    assert ["FOR UPDATE" in q["sql"] for q in queries.captured_queries] == [True, False]  # locked, then held
    assert _balance(company) == (Decimal(2), Decimal(1))
    assert ledger_verify() == []


@pytest.mark.postgres
def test_hold_fresh_checks_its_arguments_before_any_statement(company):
    _credit(company, "3")
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        for amounts in (["0"], ["-1"], ["0.1234567890123456789"], []):
            with pytest.raises(ValueError):
                _hold_fresh(company, amounts)
        with pytest.raises(UnsupportedAsset):
            _hold_fresh(company, ["1"], code="xyz")
    assert queries.captured_queries == []
    with transaction.atomic():
        hold = _hold_fresh(company, ["1", "1"])
        with pytest.raises(ValueError, match="twice"):
            hold.unwritten(["w:1", "w:1"])
        with pytest.raises(ValueError):
            hold.unwritten(["w:1"])
        with pytest.raises(ValueError):
            hold.unwritten(["w:1", " "])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_hold_fresh_needs_the_callers_transaction(company):
    _credit(company, "3")
    with pytest.raises(transaction.TransactionManagementError):
        _hold_fresh(company, ["1"])
    assert _balance(company) == (Decimal(3), Decimal(0))


def test_hold_fresh_is_postgresql_only(company, monkeypatch):
    _credit(company, "3")
    # On PostgreSQL too: the connection is made to look like another database's for this one call.
    monkeypatch.setattr(connection, "vendor", "sqlite")
    with transaction.atomic(), pytest.raises(NotSupportedError):
        _hold_fresh(company, ["1"])
    monkeypatch.undo()
    assert _balance(company) == (Decimal(3), Decimal(0))
