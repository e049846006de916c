"""Races on PostgreSQL (real row locks): each operation in its own thread and database connection."""

import functools
import threading
import time
from collections.abc import Callable
from decimal import Decimal

import pytest
from django.db import connection

from payments.ledger import ledger_verify
from payments.models import Account, LedgerEntry, SandboxTransaction
from tests.chain import fund
from tests.workers import run_together
from webhooks.models import WebhookEvent
from withdrawals import payouts, services, tasks
from withdrawals.auto_withdrawals import auto_withdrawal_sweep, auto_withdrawal_sweep_due
from withdrawals.models import AutoWithdrawalRule, IdempotencyKey, Withdrawal, WithdrawalCounter
from withdrawals.rules import WithdrawalItem
from withdrawals.tests.conftest import ADDRESSES, balance, client_for, item, withdraw

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _available_never_negative(company, code):
    running = Decimal(0)
    entries = LedgerEntry.objects.filter(account__company=company, account__code=code).order_by("pk")
    for available_delta in entries.values_list("available_delta", flat=True):
        running += available_delta
        assert running >= 0


@pytest.mark.parametrize("counter", [False, True], ids=["first withdrawals", "counter exists"])
def test_50_concurrent_withdrawals_against_a_balance_for_exactly_10(merchant, counter):
    fund(merchant.company, "btc", "0.011")  # 10 x (0.001 + 0.0001 fee)
    if counter:  # then every request is one statement in autocommit (payments.ledger), none a transaction
        fund(merchant.company, "eth", "1")
        assert withdraw(client_for(merchant), item("eth", "0.01")).status_code == 200
    calls = [lambda: withdraw(client_for(merchant), item("btc", "0.001")) for _ in range(50)]

    responses = run_together(calls)

    assert not [r for r in responses if isinstance(r, Exception)], responses
    statuses = [r.status_code for r in responses]
    assert statuses.count(200) == 10
    assert statuses.count(400) == 40
    assert {r.json()["code"] for r in responses if r.status_code == 400} == {"insufficient_balance"}
    assert len({r.json()[0]["uid"] for r in responses if r.status_code == 200}) == 10
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal("0.011"))
    assert Withdrawal.objects.filter(code="btc").count() == 10
    assert WebhookEvent.objects.filter(family="withdrawal", body__contains='"btc"').count() == 10
    assert WithdrawalCounter.objects.get().next_sequence == 11 + counter  # no uid drawn by a refusal
    assert ledger_verify() == []
    _available_never_negative(merchant.company, "btc")


def test_20_concurrent_identical_requests_with_one_key_execute_once(merchant):
    fund(merchant.company, "btc", "1")
    headers = {"Idempotency-Key": "payout-2026-11-22"}
    calls = [
        lambda: withdraw(client_for(merchant), item("btc", "0.001"), item("btc", "0.002"), headers=headers)
        for _ in range(20)
    ]

    responses = run_together(calls)

    assert not [r for r in responses if isinstance(r, Exception)], responses
    assert [r.status_code for r in responses] == [200] * 20
    assert len({r.content for r in responses}) == 1
    assert sum(1 for r in responses if r.has_header("Idempotent-Replayed")) == 19
    assert Withdrawal.objects.count() == 2
    assert balance(merchant.company, "btc") == (Decimal("0.9968"), Decimal("0.0032"))
    assert IdempotencyKey.objects.get().status_code == 200
    assert ledger_verify() == []


def test_concurrent_sweeps_of_one_rule_create_one_withdrawal(merchant):
    AutoWithdrawalRule.objects.create(
        company=merchant.company,
        code="btc",
        amount=Decimal("0.01"),
        is_enabled=True,
        address=ADDRESSES["btc"],
    )
    fund(merchant.company, "btc", "0.05")
    rule = AutoWithdrawalRule.objects.get()
    calls = [lambda: auto_withdrawal_sweep(rule_id=rule.pk) for _ in range(5)]
    calls += [auto_withdrawal_sweep_due for _ in range(5)]

    outcomes = run_together(calls)

    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    sweep = Withdrawal.objects.get()
    assert sweep.is_automatic and sweep.amount == Decimal("0.0499")
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal("0.05"))
    assert ledger_verify() == []


def test_concurrent_planners_and_broadcasts_of_one_withdrawal_send_once(merchant, api):
    fund(merchant.company, "btc", "1")
    uid = withdraw(api, item()).json()[0]["uid"]

    def plan_without_the_lock() -> list[int]:
        return payouts._plan("btc")  # the store step's row locks alone must keep it to one plan

    planned = run_together([plan_without_the_lock for _ in range(8)])
    assert not [o for o in planned if isinstance(o, Exception)], planned
    (chain_tx_id,) = [pk for result in planned for pk in result]
    outcomes = run_together([lambda: tasks.payout_broadcast(chain_tx_id) for _ in range(8)])

    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert SandboxTransaction.objects.filter(reference=f"withdrawal:{uid}").count() == 1
    statuses = WebhookEvent.objects.filter(object_id=uid).values_list("event_status", flat=True)
    assert sorted(statuses) == ["processing", "processing"]


def test_concurrent_bulk_calls_over_two_assets_neither_deadlock_nor_overspend(merchant):
    fund(merchant.company, "btc", "0.0055")  # 5 x 0.0011
    fund(merchant.company, "eth", "0.0275")  # 5 x 0.0055
    forward = [item("btc", "0.001"), item("eth", "0.005")]
    backward = list(reversed(forward))
    calls = [
        (lambda items=(forward if i % 2 else backward): withdraw(client_for(merchant), *items))
        for i in range(12)
    ]

    responses = run_together(calls)

    assert not [r for r in responses if isinstance(r, Exception)], responses
    assert [r.status_code for r in responses].count(200) == 5
    assert {r.json()["code"] for r in responses if r.status_code != 200} == {"insufficient_balance"}
    accounts = Account.objects.filter(company=merchant.company)
    assert {a.code: a.available for a in accounts} == {"btc": Decimal(0), "eth": Decimal(0)}
    assert ledger_verify() == []


# --- the uid counter: one `UPDATE ... RETURNING`, its row lock held until commit ---------------------------


def _items(code, count):
    amount = {"btc": "0.001", "eth": "0.01", "ltc": "0.01", "trx": "15", "ton": "1"}[code]
    tag = "42" if code == "ton" else ""
    return [WithdrawalItem(asset=code, to=ADDRESSES[code], amount=Decimal(amount), tag=tag)] * count


def _sequences(withdrawals):
    return [int(w.uid.split("-")[1]) for w in withdrawals]


def test_concurrent_withdrawals_in_different_codes_get_unique_consecutive_uids(merchant):
    """Five codes, so the account locks do not queue the calls and they meet at the counter; the company has
    no counter row yet, so the first ones also race to create it."""
    codes = ["btc", "eth", "ltc", "trx", "ton"]
    for code, amount in {"btc": "1", "eth": "1", "ltc": "10", "trx": "1000", "ton": "100"}.items():
        fund(merchant.company, code, amount)
    assert not WithdrawalCounter.objects.exists()
    sizes = [1 + i % 3 for i in range(20)]
    calls = [
        (
            lambda code=codes[i % 5], size=size: services.withdrawal_request(
                company=merchant.company, items=_items(code, size)
            )
        )
        for i, size in enumerate(sizes)
    ]

    outcomes = run_together(calls)

    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    for accepted, size in zip(outcomes, sizes, strict=True):
        first = _sequences(accepted)[0]
        assert _sequences(accepted) == list(range(first, first + size))  # one call, one range
    every = sorted(sequence for accepted in outcomes for sequence in _sequences(accepted))
    assert every == list(range(1, sum(sizes) + 1))  # none twice, none skipped
    assert WithdrawalCounter.objects.get().next_sequence == sum(sizes) + 1
    assert Withdrawal.objects.count() == sum(sizes)
    assert ledger_verify() == []


def _someone_waits_on_a_lock():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


@pytest.mark.parametrize("first_of_company", [True, False])
@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_a_withdrawal_waits_for_the_counter_another_transaction_holds(merchant, first_of_company, outcome):
    """A holds uids (and the counter row, or the row it just inserted) in an open transaction; B, in another
    code, must wait for it, then continue after A's range, or take the same range when A rolled back."""
    company = merchant.company
    fund(company, "btc", "1")
    fund(company, "eth", "1")
    start = 1
    if not first_of_company:
        services.withdrawal_request(company=company, items=_items("btc", 1))
        start = 2
    holding, release = threading.Event(), threading.Event()

    class RolledBack(Exception):
        pass

    def hold_open(accepted):  # inside A's transaction, after its uids were drawn
        holding.set()
        assert release.wait(timeout=30)
        if outcome == "rollback":
            raise RolledBack

    def a():
        try:
            return services.withdrawal_request(company=company, items=_items("btc", 3), on_accepted=hold_open)
        except RolledBack:
            return None
        finally:
            holding.set()

    results: dict[str, object] = {}

    def b():
        return services.withdrawal_request(company=company, items=_items("eth", 2))

    threads = [_in_thread("a", a, results)]
    try:
        assert holding.wait(timeout=30)
        threads.append(_in_thread("b", b, results))
        deadline = time.monotonic() + 30
        while not _someone_waits_on_a_lock():  # B is queued behind A's lock before A ends
            assert time.monotonic() < deadline, "B never waited for A's counter"
        assert "b" not in results
    finally:
        release.set()
        for thread in threads:
            if thread.is_alive():
                thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)

    b = results["b"]
    assert not isinstance(b, Exception), b
    if outcome == "commit":
        assert _sequences(results["a"]) == [start, start + 1, start + 2]
        assert _sequences(b) == [start + 3, start + 4]
    else:
        assert results["a"] is None
        assert _sequences(b) == [start, start + 1]
    assert WithdrawalCounter.objects.get().next_sequence == _sequences(b)[-1] + 1
    assert ledger_verify() == []


# --- the one-code hold (payments.ledger._statement): the account, then the counter, in one statement ------


def test_concurrent_one_code_withdrawals_from_one_account_never_overdraw(merchant):
    """Every call queues on the one btc account; the balance covers 30 of the 48 items asked for."""
    each = Decimal("0.0011")  # 0.001 + 0.0001 fee
    fund(merchant.company, "btc", each * 30)
    sizes = [1 + i % 3 for i in range(24)]  # 48 items
    calls: list[Callable[[], object]] = [
        functools.partial(services.withdrawal_request, company=merchant.company, items=_items("btc", size))
        for size in sizes
    ]

    outcomes = run_together(calls)

    accepted = [o for o in outcomes if isinstance(o, list)]
    refused = [o for o in outcomes if not isinstance(o, list)]
    assert all(getattr(o, "code", None) == "insufficient_balance" for o in refused), refused
    assert all({e.code for e in o.errors} == {"insufficient_balance"} for o in refused)
    held = sum(len(a) for a in accepted)
    assert 28 <= held <= 30  # 30 items' worth: only a call larger than what is left is refused
    for withdrawals in accepted:
        first = _sequences(withdrawals)[0]
        assert _sequences(withdrawals) == list(range(first, first + len(withdrawals)))
    every = sorted(sequence for withdrawals in accepted for sequence in _sequences(withdrawals))
    assert every == list(range(1, held + 1))  # refused calls drew nothing: none skipped, none twice
    assert WithdrawalCounter.objects.get().next_sequence == held + 1
    assert balance(merchant.company, "btc") == (each * (30 - held), each * held)
    assert Withdrawal.objects.count() == LedgerEntry.objects.filter(kind="withdrawal_hold").count() == held
    assert ledger_verify() == []
    _available_never_negative(merchant.company, "btc")


def _in_thread(name, operation, results):
    def run():
        try:
            results[name] = operation()
        except Exception as exc:
            results[name] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_refused_hold_does_not_wait_for_the_counter(merchant):
    """A holds the counter in an open transaction; B is short of btc: its statement must refuse without
    touching the counter (the counter's update runs only after the account's matched), so B is never
    queued behind A."""
    company = merchant.company
    fund(company, "eth", "1")
    fund(company, "btc", "0.001")  # 0.001 + 0.0001 fee is short
    services.withdrawal_request(company=company, items=_items("eth", 1))  # the counter row exists
    holding, release = threading.Event(), threading.Event()

    def hold_open(accepted):
        holding.set()
        assert release.wait(timeout=30)

    results: dict[str, object] = {}
    a = _in_thread(
        "a",
        lambda: services.withdrawal_request(company=company, items=_items("eth", 1), on_accepted=hold_open),
        results,
    )
    try:
        assert holding.wait(timeout=30)
        b = _in_thread(
            "b", lambda: services.withdrawal_request(company=company, items=_items("btc", 1)), results
        )
        deadline = time.monotonic() + 30
        while b.is_alive():
            assert not _someone_waits_on_a_lock(), "the refused hold waited for the counter"
            assert time.monotonic() < deadline
        assert "a" not in results  # A still holds the counter
    finally:
        release.set()
        a.join(timeout=60)
    assert getattr(results["b"], "code", None) == "insufficient_balance"
    assert _sequences(results["a"]) == [2]
    assert WithdrawalCounter.objects.get().next_sequence == 3
    assert ledger_verify() == []


def test_a_sweep_holding_the_account_and_a_withdrawal_waiting_for_it_do_not_deadlock(merchant):
    """A locks the btc account first and draws from the counter afterwards, as auto_withdrawal_sweep does;
    B's one-code withdrawal queues on the account meanwhile. Were B's counter update not ordered after its
    account update, B would hold the counter while A waits for it, and A the account B waits for: a
    deadlock, which PostgreSQL breaks by failing one of them."""
    from django.db import transaction

    from payments.ledger import account_for_update
    from withdrawals.rules import check_item

    company = merchant.company
    fund(company, "btc", "1")
    services.withdrawal_request(company=company, items=_items("btc", 1))  # the counter row exists
    locked, go = threading.Event(), threading.Event()

    def sweep_like():
        with transaction.atomic():
            account_for_update(company_id=company.pk, code="btc")
            locked.set()
            assert go.wait(timeout=30)
            checked, errors = check_item(_items("btc", 1)[0])
            assert checked is not None, errors
            return services.withdrawal_accept(company=company, items=[checked], is_automatic=True)

    results: dict[str, object] = {}
    a = _in_thread("a", sweep_like, results)
    try:
        assert locked.wait(timeout=30)
        b = _in_thread(
            "b", lambda: services.withdrawal_request(company=company, items=_items("btc", 1)), results
        )
        deadline = time.monotonic() + 30
        while not _someone_waits_on_a_lock():  # B queued on the account A holds
            assert time.monotonic() < deadline, "B never waited for the account"
            assert b.is_alive(), results.get("b")
    finally:
        go.set()
        a.join(timeout=60)
    b.join(timeout=60)
    assert not a.is_alive() and not b.is_alive()
    assert not isinstance(results["a"], Exception), results["a"]
    assert not isinstance(results["b"], Exception), results["b"]
    assert _sequences(results["a"]) == [2]  # A drew first: B waited for the account before the counter
    assert _sequences(results["b"]) == [3]
    assert balance(company, "btc") == (Decimal("0.9967"), Decimal("0.0033"))
    assert ledger_verify() == []
