"""The `scale` kind's pure helpers (tests/test_bench_scale.py): the generating SQL, the deep page's depth,
and the plan checks."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Any


def insert_select_sql(table: str, columns: Sequence[tuple[str, str]], overrides: dict[str, str]) -> str:
    """`INSERT INTO table (...) SELECT ... FROM generate_series(1, %s)`: one template value per column (a
    parameter, cast to the column's type), or the column's SQL expression from `overrides`.

    An expression may use `s.i` (1..N), `s.uid` (a fresh uuid per row) and `{value}` (the template's value,
    one parameter). Parameters come in column order, then N.
    """
    names, values = [], []
    for column, cast in columns:
        names.append(f'"{column}"')
        template = f"CAST(%s AS {cast})"
        values.append(overrides[column].replace("{value}", template) if column in overrides else template)
    rows = "(SELECT g.i, gen_random_uuid() AS uid FROM generate_series(1, %s) AS g(i)) AS s"
    # Names from the models, expressions from this module; every value is a parameter.
    return f'INSERT INTO "{table}" ({", ".join(names)}) SELECT {", ".join(values)} FROM {rows}'  # noqa: S608


def template_params(columns: Sequence[str], values: dict[str, Any], overrides: dict[str, str]) -> list[Any]:
    """The parameters `insert_select_sql` expects before N: a value per column its SQL has a `%s` for."""
    return [values[c] for c in columns if c not in overrides or "{value}" in overrides[c]]


def page_depth(count: int, wanted: int, page: int) -> int | None:
    """The row whose position starts a deep page: `wanted` rows deep, but never so deep that fewer than a
    full `page` follow it (so both merchants' deep pages hold as many rows); None when there is none."""
    depth = min(wanted, count - page - 1)
    return depth if depth >= 0 else None


def median_ms(timings_s: Sequence[float]) -> float:
    return statistics.median(timings_s) * 1000


def plan_problems(plan: str, tables: Sequence[str]) -> list[str]:
    """What is wrong with an EXPLAIN text: a sequential scan of one of the big `tables`, or no index used."""
    problems = [f"Seq Scan on {table}" for table in tables if f"Seq Scan on {table}" in plan]
    if "Index" not in plan:
        problems.append("no index used")
    return problems


def rows_read(plan: str) -> int:
    """The most rows any node of an EXPLAIN ANALYZE text produced or filtered out: near the page size when
    a page is read through its index from its position on, near the table when it reads what it skips."""
    produced = [
        int(n) * int(loops) for n, loops in re.findall(r"actual time=\S+ rows=(\d+) loops=(\d+)", plan)
    ]
    removed = [int(n) for n in re.findall(r"Rows Removed by Filter: (\d+)", plan)]
    return max([0, *produced, *removed])


def plan_gist(plan: str) -> str:
    """The scan nodes of a plan (which index, or which sequential scan), without their numbers."""
    scans = [line.split("(cost=")[0].strip().removeprefix("->").strip() for line in plan.splitlines()]
    return "; ".join(scan for scan in scans if " Scan " in f" {scan}")
