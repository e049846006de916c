"""What accepting a withdrawal costs the database, and that the rows are written whole or not at all.

A one-item withdrawal on PostgreSQL: the token lookup, then one statement in autocommit that holds the
amount on the account (taking its row lock), draws the uid from the counter and writes the hold's entry,
the withdrawal and its webhook event (payments.ledger.numbered). Any other one-code withdrawal:
BEGIN, the hold and the uids in one statement, the rows in another, COMMIT. COPY (bulk_insert) only above
`TOGETHER_ITEMS`; COPY is not in `connection.queries`, so the driver's `copy` is watched as well.
"""

import re
from decimal import Decimal

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from core.bulkinsert import TOGETHER_MAX_ROWS
from payments.ledger import ledger_hold, ledger_verify
from payments.models import LedgerEntry
from tests.chain import fund
from webhooks.models import WebhookEvent
from withdrawals import services
from withdrawals.models import Withdrawal, WithdrawalCounter, WithdrawalRequest
from withdrawals.rules import WithdrawalItem
from withdrawals.tests.conftest import ADDRESSES, balance, item, withdraw

# A withdrawal writes three rows (ledger entry, withdrawal, webhook event): up to this many items are
# written in one statement, more with COPY.
TOGETHER_ITEMS = TOGETHER_MAX_ROWS // 3

pytestmark = pytest.mark.django_db


@pytest.fixture
def copies(monkeypatch):
    """The COPY statements run meanwhile (the driver's, so none escapes however it is reached)."""
    seen: list[str] = []
    real = psycopg.Cursor.copy

    def spy(self, statement, *args, **kwargs):
        seen.append(statement.as_string(self) if hasattr(statement, "as_string") else str(statement))
        return real(self, statement, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "copy", spy)
    return seen


def _sequence(uid):
    return int(uid.split("-")[1])


def _items(count, code="btc", amount="0.001"):
    return [WithdrawalItem(asset=code, to=ADDRESSES[code], amount=Decimal(amount)) for _ in range(count)]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # autocommit, as in production
def test_one_item_withdrawal_is_one_statement_and_no_copy(api, funded, copies):
    withdraw(api, item())  # the company's first withdrawal also creates its counter row

    with CaptureQueriesContext(connection) as queries:
        response = withdraw(api, item())

    assert response.status_code == 200
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 2, "\n".join(s[:120] for s in statements)  # the token lookup, then this one
    assert copies == []
    one = statements[1]
    assert not [s for s in statements if "nextval" in s or "SAVEPOINT" in s or "FOR UPDATE" in s]
    # The account is locked by the UPDATE that holds the amount, whose WHERE has no subquery (one that a
    # waiting UPDATE would run again); the counter's UPDATE waits for that one's RETURNING
    # (payments.ledger._statement: the account before the counter), and the rows are made from both (no
    # row made, nothing written).
    assert one.startswith('WITH held AS (UPDATE "payments_account"')
    held = one[: one.index("after_hold AS")]
    assert '"available" >= ' in held and "SELECT" not in held
    assert 'UPDATE "withdrawals_withdrawalcounter"' in one and "EXISTS (SELECT 1 FROM held)" in one
    assert one.index('"payments_account"') < one.index('UPDATE "withdrawals_withdrawalcounter"')
    made_from_hold = re.findall(r'INSERT INTO "(\w+)" \([^)]*\) SELECT .*? FROM hold\b', one)
    assert made_from_hold == ["payments_ledgerentry", "withdrawals_withdrawal", "webhooks_webhookevent"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_one_item_withdrawal_with_a_key_keeps_its_transaction(api, funded, copies):
    withdraw(api, item())

    with CaptureQueriesContext(connection) as queries:
        response = withdraw(api, item(), headers={"Idempotency-Key": "one-item"})

    assert response.status_code == 200
    statements = [q["sql"] for q in queries.captured_queries]
    assert "BEGIN" in statements and statements[-1] == "COMMIT"
    hold = next(s for s in statements if s.startswith("WITH held"))
    assert "FROM hold" not in hold  # the hold and the uid; the rows follow in their own statement
    assert [s for s in statements if 'INSERT INTO "withdrawals_withdrawal"' in s]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_multi_code_withdrawal_keeps_the_locking_path(api, funded, copies):
    withdraw(api, item())

    with CaptureQueriesContext(connection) as queries:
        response = withdraw(api, item(), item("eth", "0.01"))

    assert response.status_code == 200
    statements = [q["sql"] for q in queries.captured_queries]
    locks = [s for s in statements if "FOR UPDATE" in s]
    assert len(locks) == 2  # btc, then eth
    assert not [s for s in statements if s.startswith("WITH held")]
    counter = next(
        i for i, s in enumerate(statements) if s.startswith('UPDATE "withdrawals_withdrawalcounter"')
    )
    assert counter > statements.index(locks[-1])  # the accounts, then the counter


@pytest.mark.postgres
def test_a_bulk_above_the_limit_is_written_with_copy(merchant, copies):
    fund(merchant.company, "btc", "1")
    copies.clear()  # the funding credit's

    small = services.withdrawal_request(company=merchant.company, items=_items(TOGETHER_ITEMS))
    assert copies == []
    large = services.withdrawal_request(company=merchant.company, items=_items(TOGETHER_ITEMS + 1))
    assert [c.split()[1] for c in copies] == [
        '"payments_ledgerentry"',
        '"withdrawals_withdrawal"',
        '"webhooks_webhookevent"',
    ]
    assert len(small) + len(large) == Withdrawal.objects.count()


@pytest.mark.parametrize("count", [1, 3, TOGETHER_ITEMS, TOGETHER_ITEMS + 1])
def test_every_row_is_written_with_its_key_whichever_way(merchant, count):
    fund(merchant.company, "btc", "1")
    fund(merchant.company, "eth", "1")
    items = [*_items(count - count // 2), *_items(count // 2, "eth", "0.01")]

    accepted = services.withdrawal_request(company=merchant.company, items=items)

    assert [w.code for w in accepted] == [i.asset for i in items]
    assert [Withdrawal.objects.get(pk=w.pk).uid for w in accepted] == [w.uid for w in accepted]
    assert [_sequence(w.uid) for w in accepted] == list(range(1, count + 1))
    holds = LedgerEntry.objects.filter(kind="withdrawal_hold")
    assert sorted(holds.values_list("reference", flat=True)) == sorted(w.reference for w in accepted)
    events = WebhookEvent.objects.filter(family="withdrawal")
    assert sorted(events.values_list("object_id", flat=True)) == sorted(w.uid for w in accepted)
    assert WithdrawalRequest.objects.count() == (1 if count > 1 else 0)
    assert WithdrawalCounter.objects.get(company=merchant.company).next_sequence == count + 1
    assert ledger_verify() == []


def test_a_bulk_of_three_with_one_short_code_writes_nothing(api, merchant):
    fund(merchant.company, "btc", "1")
    fund(merchant.company, "eth", "0.0054")  # 0.005 + 0.0005 fee is 0.0055
    first = withdraw(api, item()).json()[0]["uid"]
    before = {code: balance(merchant.company, code) for code in ("btc", "eth")}

    refused = withdraw(api, item(), item("eth", "0.005"), item())

    assert refused.status_code == 400
    assert refused.json()["code"] == "insufficient_balance"
    assert [e["field"] for e in refused.json()["errors"]] == ["items[1].amount"]
    assert {code: balance(merchant.company, code) for code in before} == before
    assert list(Withdrawal.objects.values_list("uid", flat=True)) == [first]
    assert LedgerEntry.objects.filter(kind="withdrawal_hold").count() == 1
    assert WebhookEvent.objects.filter(family="withdrawal").count() == 1
    assert not WithdrawalRequest.objects.exists()
    # The counter went back with the rest: the next uid is the one after the first.
    assert _sequence(withdraw(api, item()).json()[0]["uid"]) == _sequence(first) + 1
    assert ledger_verify() == []


@pytest.mark.parametrize(
    "count",
    [
        2,  # in the caller's transaction (the test's): the hold and the uids, then the rows
        # one item in autocommit: the one statement (payments.ledger.numbered)
        pytest.param(1, marks=[pytest.mark.postgres, pytest.mark.django_db(transaction=True)]),
    ],
    ids=["two items", "one item, one statement"],
)
def test_a_hold_reference_used_before_fails_the_whole_acceptance(merchant, count):
    """Nothing reads for replays on this path; were the last new uid's reference held already, the unique
    (account, kind, reference) refuses the write and nothing of the acceptance stays, balances included."""
    fund(merchant.company, "btc", "1")
    (first,) = services.withdrawal_request(company=merchant.company, items=_items(1))
    taken = f"withdrawal:{merchant.company.uid_prefix}-{_sequence(first.uid) + count}"
    ledger_hold(company_id=merchant.company.pk, code="btc", amount=Decimal("0.0011"), reference=taken)
    before = balance(merchant.company, "btc")

    with pytest.raises(IntegrityError):
        services.withdrawal_request(company=merchant.company, items=_items(count))

    assert balance(merchant.company, "btc") == before
    assert list(Withdrawal.objects.values_list("uid", flat=True)) == [first.uid]
    assert WebhookEvent.objects.filter(family="withdrawal").count() == 1
    assert WithdrawalCounter.objects.get(company=merchant.company).next_sequence == _sequence(first.uid) + 1
    assert ledger_verify() == []


def test_the_table_refuses_a_second_withdrawal_with_a_uid_in_use(merchant):
    """The uid is unique by the table's own constraint (withdrawal_uid_unique), not only by the counter."""
    fund(merchant.company, "btc", "1")
    (first,) = services.withdrawal_request(company=merchant.company, items=_items(1))
    twin = Withdrawal.objects.get(pk=first.pk)
    twin.pk = None  # saved as a new row: every value the same, the uid included

    with pytest.raises(IntegrityError), transaction.atomic():
        twin.save()

    assert list(Withdrawal.objects.values_list("uid", flat=True)) == [first.uid]


@pytest.mark.postgres
def test_a_bulks_withdrawals_are_read_through_the_partial_request_index(merchant):
    """withdrawal_request_idx holds only withdrawals that came in a bulk; a lookup by request (a parameter,
    as every ORM query sends it) still uses it, since `request_id = $1` implies the index's NOT NULL."""
    fund(merchant.company, "btc", "1")
    services.withdrawal_request(company=merchant.company, items=_items(2))
    services.withdrawal_request(company=merchant.company, items=_items(1))
    request = WithdrawalRequest.objects.get()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table would be scanned whole otherwise

        plan = Withdrawal.objects.filter(request=request).explain()

    assert "withdrawal_request_idx" in plan
    assert Withdrawal.objects.filter(request=request).count() == 2
