"""psycopg: remember the conversion of Kassa's own long statements, as it does for short ones.

Before psycopg sends a statement it turns its `%s` placeholders into PostgreSQL's `$1, $2 ...`, which
means scanning the whole text. It keeps the result (an LRU cache of 128 statements) only for a statement
of at most 4,096 bytes *and* at most 50 parameters: an ORM's `INSERT ... VALUES (...), (...)` changes
text with every row count, and caching those would only churn the cache. Kassa's one-statement writes
(`core.bulkinsert.insert_together`: a one-item withdrawal holds the balance, numbers the withdrawal
and writes it with its ledger entry and webhook event in one statement) have the same text on every call
but more than 50 parameters, so each call scanned its 2 KB again (about 0.1 ms of a 2 ms request).

The limit on parameters is raised to `MAX_CACHED_PARAMS`; the limit on length stays: a bulk write of many
rows is longer than 4,096 bytes and is still converted without being cached. A cached statement holds its
text and one small tuple per parameter: 128 of them take well under a megabyte.
"""

from __future__ import annotations

import psycopg._queries

MAX_CACHED_PARAMS = 400


def cache_long_statements() -> None:
    """Raise psycopg's parameter limit for caching a statement's conversion (see the module's docstring).
    Idempotent; never lowers a limit psycopg already sets higher."""
    current = psycopg._queries.MAX_CACHED_STATEMENT_PARAMS
    psycopg._queries.MAX_CACHED_STATEMENT_PARAMS = max(current, MAX_CACHED_PARAMS)
