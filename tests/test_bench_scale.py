"""The `scale` bench kind's helpers: the generating SQL, the deep page's depth, and the plan checks."""

from __future__ import annotations

import pytest

from tools.bench.scale_sql import (
    insert_select_sql,
    median_ms,
    page_depth,
    plan_gist,
    plan_problems,
    rows_read,
    template_params,
)

DEEP_PLAN = """Limit  (cost=3.84..165.58 rows=51 width=3417) (actual time=208.429..208.473 rows=51 loops=1)
  ->  Index Scan using invoice_company_idx on invoices_invoice  (cost=0.43..1.81 rows=60900 width=199) \
(actual time=208.313..208.329 rows=52 loops=1)
        Index Cond: (company_id = 'x'::uuid)
        Rows Removed by Filter: 900035
  ->  Parallel Seq Scan on webhooks_webhookattempt  (cost=0.00..7.62 rows=4062 width=24) \
(actual time=0.038..6.724 rows=3600 loops=3)"""


def test_each_column_gets_the_template_value_or_its_expression() -> None:
    columns = [("id", "uuid"), ("status", "varchar(16)"), ("body", "text"), ("total", "numeric(36, 18)")]
    overrides = {"id": "s.uid", "body": "replace({value}, 'X', s.uid::text)"}
    sql = insert_select_sql("t", columns, overrides)
    assert sql == (
        'INSERT INTO "t" ("id", "status", "body", "total") SELECT s.uid, CAST(%s AS varchar(16)), '
        "replace(CAST(%s AS text), 'X', s.uid::text), CAST(%s AS numeric(36, 18)) "
        "FROM (SELECT g.i, gen_random_uuid() AS uid FROM generate_series(1, %s) AS g(i)) AS s"
    )
    values = {"id": "ignored", "status": "created", "body": '{"id":"X"}', "total": "4.50"}
    params = template_params([name for name, _ in columns], values, overrides)
    assert params == ["created", '{"id":"X"}', "4.50"]
    assert sql.count("%s") == len(params) + 1  # and N last


@pytest.mark.parametrize(
    ("count", "expected"),
    [(1_000_040, 900_000), (120, 69), (52, 1), (51, 0), (50, None), (0, None)],
)
def test_the_deep_page_is_as_deep_as_wanted_and_still_full(count: int, expected: int | None) -> None:
    assert page_depth(count, 900_000, 50) == expected


def test_median_is_in_milliseconds() -> None:
    assert median_ms([0.003, 0.001, 0.002, 0.100]) == pytest.approx(2.5)


def test_a_plan_is_checked_for_sequential_scans_of_the_big_tables_only() -> None:
    assert plan_problems(DEEP_PLAN, ["invoices_invoice", "webhooks_webhookevent"]) == []
    assert plan_problems(DEEP_PLAN, ["webhooks_webhookattempt"]) == ["Seq Scan on webhooks_webhookattempt"]
    assert plan_problems("Seq Scan on other  (cost=0..1)", []) == ["no index used"]


def test_rows_read_counts_what_the_filter_threw_away_and_every_worker() -> None:
    assert rows_read(DEEP_PLAN) == 900_035
    assert rows_read(DEEP_PLAN.replace("Rows Removed by Filter: 900035", "")) == 3600 * 3


def test_the_gist_names_each_scan() -> None:
    assert plan_gist(DEEP_PLAN) == (
        "Index Scan using invoice_company_idx on invoices_invoice; "
        "Parallel Seq Scan on webhooks_webhookattempt"
    )


@pytest.mark.postgres
@pytest.mark.django_db
def test_generated_rows_satisfy_the_tables_and_list_through_the_api(client) -> None:  # type: ignore[no-untyped-def]
    from invoices.models import Invoice
    from payments.services import merchant_create
    from tools.bench.scale import SMALL, Merchant, _ensure_rows
    from webhooks.models import WebhookEvent

    credentials = merchant_create(name="Scale Test Shop", email="scale-test@shop.test")
    _ensure_rows(Merchant(SMALL, credentials.company, credentials.public_token), 8)

    invoices = Invoice.objects.filter(company=credentials.company)
    assert invoices.count() == 8 and invoices.values("status").distinct().count() == 7
    event = WebhookEvent.objects.filter(company=credentials.company).first()
    assert event is not None and event.object_id in event.body
    response = client.get(
        "/api/invoices/v1/regular?limit=50&after=", HTTP_AUTHORIZATION=f"Bearer {credentials.public_token}"
    )
    assert response.status_code == 200 and len(response.json()["results"]) == 8
