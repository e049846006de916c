"""The one-code withdrawal on PostgreSQL (payments.ledger.numbered): `_one_code` makes the account's lock,
the balance check and change and the uid draw in one statement, the rows made before it; `_one_statement`
(one item in autocommit) writes the rows in that statement too. Both must answer and write exactly what the
locking form (`_locking`, used for several codes and on SQLite) does."""

import json
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.bulkinsert import TOGETHER_MAX_ROWS
from payments.ledger import ledger_verify
from payments.ledger import numbered as holding
from payments.models import Account, LedgerEntry
from tests.chain import fund
from webhooks.models import WebhookEvent
from withdrawals import services
from withdrawals.models import Withdrawal, WithdrawalCounter, WithdrawalRequest
from withdrawals.rules import WithdrawalItem
from withdrawals.tests.conftest import ADDRESSES, item, withdraw

# A withdrawal writes three rows (ledger entry, withdrawal, webhook event): up to this many items are
# written in one statement, more with COPY.
TOGETHER_ITEMS = TOGETHER_MAX_ROWS // 3

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


@pytest.fixture
def locking_path(monkeypatch):
    """Switch one-code withdrawals to the locking path, the reference the fast path is compared with."""

    def switch():
        monkeypatch.setattr(holding, "_one_code", holding._locking)
        monkeypatch.setattr(holding, "_one_statement", lambda *args: None)

    return switch


@pytest.fixture
def fast_path_runs(monkeypatch):
    """How many times the fast path ran (so a test cannot pass on the locking path by mistake)."""
    return _counted(monkeypatch, "_one_code")


@pytest.fixture
def one_statement_runs(monkeypatch):
    """What each run of the one-statement path made (None: nothing, the transaction's way followed)."""
    return _counted(monkeypatch, "_one_statement")


def _counted(monkeypatch, name):
    runs = []
    real = getattr(holding, name)

    def counted(*args, **kwargs):
        runs.append(None)  # a run that raised stays None
        runs[-1] = made = real(*args, **kwargs)
        return made

    monkeypatch.setattr(holding, name, counted)
    return runs


def _written(company):
    """Everything a withdrawal writes, to show that a refused one wrote nothing."""
    counter = WithdrawalCounter.objects.filter(company=company).values_list("next_sequence", flat=True)
    return {
        "accounts": sorted(
            Account.objects.filter(company=company).values_list("code", "available", "held", "updated_at")
        ),
        "counter": counter.first(),
        "entries": LedgerEntry.objects.count(),
        "withdrawals": Withdrawal.objects.count(),
        "requests": WithdrawalRequest.objects.count(),
        "events": WebhookEvent.objects.filter(family="withdrawal").count(),
    }


SHORT = {
    # the fee makes it short: 0.0015 + 0.0001 > 0.0015
    "one item": (("btc", "0.0015"), [("btc", "0.0015")]),
    # the sum of three items, each enough alone: 3 x 0.0011 > 0.0032
    "a bulk in one code": (("btc", "0.0032"), [("btc", "0.001")] * 3),
    # no ltc account at all: available 0
    "no account": (("btc", "1"), [("ltc", "0.01")]),
}


@pytest.mark.parametrize("first_of_company", [True, False], ids=["no counter yet", "counter"])
@pytest.mark.parametrize("case", list(SHORT))
def test_a_short_balance_gets_the_answer_of_the_locking_path_and_writes_nothing(
    api, merchant, locking_path, fast_path_runs, case, first_of_company
):
    fast_answer = _short_against_the_locking_path(api, merchant, locking_path, SHORT[case], first_of_company)

    assert fast_path_runs
    assert fast_answer["code"] == "insufficient_balance"
    assert not Account.objects.filter(company=merchant.company, code="ltc").exists()


def _short_against_the_locking_path(api, merchant, locking_path, short, first_of_company):
    """A refused withdrawal, then the same on the locking path: the same 400, and nothing written by
    either. Returns the first one's answer."""
    (code, funded), items = short
    fund(merchant.company, code, funded)
    fund(merchant.company, "eth", "1")
    if not first_of_company:
        assert withdraw(api, item("eth", "0.01")).status_code == 200
    before = _written(merchant.company)

    fast = withdraw(api, *(item(c, amount) for c, amount in items))
    after_fast = _written(merchant.company)
    locking_path()
    locking = withdraw(api, *(item(c, amount) for c, amount in items))

    assert fast.status_code == 400
    assert _without_request_id(fast.json()) == _without_request_id(locking.json())
    assert after_fast == before == _written(merchant.company)
    assert ledger_verify() == []
    return fast.json()


def test_the_answer_names_the_available_amount_and_the_sum(api, merchant):
    fund(merchant.company, "btc", "0.0032")

    refused = withdraw(api, item(), item(), item())

    assert refused.json()["detail"] == "Insufficient balance: btc available 0.0032, requested 0.0033."
    assert [(e["field"], e["message"]) for e in refused.json()["errors"]] == [
        (f"items[{i}].amount", "btc available 0.0032, requested 0.0033 (amounts plus network fees)")
        for i in range(3)
    ]


def test_exactly_enough_is_held(api, merchant):
    fund(merchant.company, "btc", "0.0033")

    accepted = withdraw(api, item(), item(), item())

    assert accepted.status_code == 200
    account = Account.objects.get(company=merchant.company, code="btc")
    assert (account.available, account.held) == (Decimal(0), Decimal("0.0033"))
    assert ledger_verify() == []


@pytest.mark.django_db(transaction=True)  # the request's own BEGIN and COMMIT
def test_the_first_withdrawal_of_a_company_creates_its_counter_after_the_hold(api, merchant, fast_path_runs):
    fund(merchant.company, "btc", "1")
    assert not WithdrawalCounter.objects.exists()

    with CaptureQueriesContext(connection) as queries:
        response = withdraw(api, item(), item())

    assert response.status_code == 200
    assert fast_path_runs
    prefix = merchant.company.uid_prefix
    assert [entry["uid"] for entry in response.json()] == [f"{prefix}-1", f"{prefix}-2"]
    assert WithdrawalCounter.objects.get().next_sequence == 3
    statements = [q["sql"] for q in queries.captured_queries]
    hold = next(i for i, s in enumerate(statements) if s.startswith("WITH held"))
    counter = [i for i, s in enumerate(statements) if '"withdrawals_withdrawalcounter"' in s and i != hold]
    assert counter and min(counter) > hold  # created once the account is held (and locked)
    assert ledger_verify() == []
    follow_up = withdraw(api, item())
    assert follow_up.json()[0]["uid"] == f"{prefix}-3"


def _rows(withdrawal):
    """What the acceptance wrote for `withdrawal`, its uid and keys aside."""
    entry = LedgerEntry.objects.get(reference=withdrawal.reference)
    event = WebhookEvent.objects.get(family="withdrawal", object_id=withdrawal.uid)
    body = json.loads(event.body, parse_float=Decimal)
    assert body["uid"] == withdrawal.uid
    volatile = {"id", "uid", "created_at", "updated_at", "request_id"}
    row = dict(Withdrawal.objects.filter(pk=withdrawal.pk).values().get())
    assert row["uid"] == withdrawal.uid
    stored = {name: value for name, value in row.items() if name not in volatile}
    return {
        "entry": (entry.account.code, entry.kind, entry.available_delta, entry.held_delta),
        "withdrawal": stored,
        "event": (event.company_id, event.event_status, event.status, {**body, "uid": "-"}),
    }


@pytest.mark.parametrize("count", [1, 3, TOGETHER_ITEMS + 1])
def test_the_rows_are_those_of_the_locking_path(merchant, locking_path, fast_path_runs, count):
    merchant.company.webhook_url = "https://example.com/hook"
    merchant.company.save()
    fund(merchant.company, "btc", "1")
    items = [
        WithdrawalItem(asset="btc", to=ADDRESSES["btc"], amount=Decimal(f"0.00{i + 1}")) for i in range(count)
    ]

    fast = services.withdrawal_request(company=merchant.company, items=items)
    assert fast_path_runs
    locking_path()
    locking = services.withdrawal_request(company=merchant.company, items=items)

    assert [_rows(w) for w in fast] == [_rows(w) for w in locking]
    sequences = [int(w.uid.split("-")[1]) for w in [*fast, *locking]]
    assert sequences == list(range(1, 2 * count + 1))
    assert not WebhookEvent.objects.filter(body__contains="<uid").exists()
    assert ledger_verify() == []


def test_an_automatic_sweep_takes_the_fast_path_with_its_account_already_locked(merchant, fast_path_runs):
    from withdrawals.auto_withdrawals import auto_withdrawal_sweep
    from withdrawals.models import AutoWithdrawalRule

    fund(merchant.company, "btc", "0.05")
    rule = AutoWithdrawalRule.objects.create(
        company=merchant.company,
        code="btc",
        amount=Decimal("0.01"),
        is_enabled=True,
        address=ADDRESSES["btc"],
    )

    sweep = auto_withdrawal_sweep(rule_id=rule.pk)

    assert fast_path_runs
    assert sweep is not None and sweep.amount == Decimal("0.0499")
    account = Account.objects.get(company=merchant.company, code="btc")
    assert (account.available, account.held) == (Decimal(0), Decimal("0.05"))
    assert ledger_verify() == []


# --- one item in autocommit: one statement -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # autocommit, as a request without an Idempotency-Key runs
@pytest.mark.parametrize("webhook_url", ["", "https://example.com/hook"], ids=["no webhook", "webhook"])
def test_one_item_is_written_by_one_statement_with_the_rows_of_the_locking_path(
    api, merchant, locking_path, one_statement_runs, webhook_url
):
    merchant.company.webhook_url = webhook_url
    merchant.company.save()
    fund(merchant.company, "btc", "1")
    assert withdraw(api, item()).status_code == 200  # the company's first: its counter is made
    assert one_statement_runs == [None]

    with CaptureQueriesContext(connection) as queries:
        response = withdraw(api, item("btc", "0.002"))

    assert response.status_code == 200
    prefix = merchant.company.uid_prefix
    assert response.json() == [{"message": "Withdrawal accepted", "success": True, "uid": f"{prefix}-2"}]
    assert one_statement_runs[1] is not None
    # The token's company read, then the one statement: no BEGIN, no COMMIT, nothing else.
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 2 and statements[1].startswith("WITH held")
    fast = Withdrawal.objects.get(uid=f"{prefix}-2")
    locking_path()
    locking = services.withdrawal_request(
        company=merchant.company,
        items=[WithdrawalItem(asset="btc", to=ADDRESSES["btc"], amount=Decimal("0.002"))],
    )
    assert _rows(fast) == _rows(locking[0])
    assert LedgerEntry.objects.filter(reference=f"withdrawal:{prefix}-2").count() == 1
    assert WithdrawalCounter.objects.get().next_sequence == 4
    assert not WebhookEvent.objects.filter(body__contains="<uid").exists()
    assert ledger_verify() == []


@pytest.mark.django_db(transaction=True)  # autocommit, as a request without an Idempotency-Key runs
def test_a_companys_first_withdrawal_fails_the_one_statement_whole_then_takes_the_transaction(
    api, merchant, one_statement_runs
):
    fund(merchant.company, "btc", "1")
    assert not WithdrawalCounter.objects.exists()

    with CaptureQueriesContext(connection) as queries:
        response = withdraw(api, item())

    prefix = merchant.company.uid_prefix
    assert response.status_code == 200 and response.json()[0]["uid"] == f"{prefix}-1"
    # The statement held the amount, found no counter row and was refused whole (the uid is NOT NULL); the
    # transaction's way then made the counter row and the withdrawal: one hold, one set of rows.
    assert one_statement_runs == [None]
    statements = [q["sql"] for q in queries.captured_queries]
    tried = next(i for i, sql in enumerate(statements) if sql.startswith("WITH held"))
    assert "FROM hold" in statements[tried] and "BEGIN" in statements[tried + 1 :]
    withdrawal = Withdrawal.objects.get()
    account = Account.objects.get(company=merchant.company, code="btc")
    assert account.held == withdrawal.amount + withdrawal.fee
    assert account.available == Decimal(1) - account.held
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.WITHDRAWAL_HOLD).count() == 1
    assert WebhookEvent.objects.filter(family="withdrawal").count() == 1
    assert WithdrawalCounter.objects.get().next_sequence == 2
    assert ledger_verify() == []
    assert withdraw(api, item()).json()[0]["uid"] == f"{prefix}-2"
    assert one_statement_runs[1] is not None  # the counter row exists now: one statement


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first_of_company", [True, False], ids=["no counter yet", "counter"])
@pytest.mark.parametrize("case", ["one item", "no account"])
def test_one_short_item_in_autocommit_writes_nothing_and_gets_the_locking_answer(
    api, merchant, locking_path, one_statement_runs, case, first_of_company
):
    answer = _short_against_the_locking_path(api, merchant, locking_path, SHORT[case], first_of_company)

    assert answer["code"] == "insufficient_balance"
    # It tried one statement, which made nothing (the eth withdrawal before it was the company's first).
    assert one_statement_runs == [None] * (1 if first_of_company else 2)


@pytest.mark.django_db(transaction=True)
def test_a_bulk_a_key_or_a_payout_policy_keep_their_transaction(api, merchant, one_statement_runs):
    from withdrawals.policy import LimitInput, payout_policy_set

    fund(merchant.company, "btc", "1")
    assert withdraw(api, item(), item()).status_code == 200
    assert withdraw(api, item(), headers={"Idempotency-Key": "k-1"}).status_code == 200
    payout_policy_set(
        company=merchant.company, cooldown_hours=0, limits={"btc": LimitInput(max_per_day=Decimal("0.0045"))}
    )
    assert withdraw(api, item()).status_code == 200  # 0.004 of 0.0045 in 24 hours
    assert withdraw(api, item()).json()["code"] == "limit_exceeded"

    assert one_statement_runs == []
    assert Withdrawal.objects.count() == 4


def _without_request_id(problem: dict) -> dict:  # type: ignore[type-arg]
    """The answer but its `requestId`, which is each request's own."""
    return {key: value for key, value in problem.items() if key != "requestId"}


@pytest.mark.django_db(transaction=True)  # autocommit: the one statement
def test_the_one_statement_is_converted_once_then_taken_from_psycopgs_cache(
    api, merchant, monkeypatch, one_statement_runs
):
    """The statement has more parameters than psycopg caches by default (core.statements): without the
    raised limit every withdrawal scans its text again."""
    import psycopg._queries

    fund(merchant.company, "btc", "1")
    assert withdraw(api, item()).status_code == 200  # the company's first: its counter is made
    assert withdraw(api, item()).status_code == 200  # the one statement, converted and cached
    scanned, sent = [], []
    real = psycopg._queries._query2pg_nocache

    def scan(query, *args):
        scanned.append(query)
        return real(query, *args)

    def send(execute, sql, params, many, context):
        sent.append(params)
        return execute(sql, params, many, context)

    monkeypatch.setattr(psycopg._queries, "_query2pg_nocache", scan)
    with connection.execute_wrapper(send):
        assert withdraw(api, item()).status_code == 200

    assert one_statement_runs[-1] is not None
    assert len(sent[-1]) > 50  # more than psycopg caches by default: this test fails without the raise
    assert scanned == []
