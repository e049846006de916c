"""Kassa's ground floor: what every app uses, importing no app of Kassa's.

Assets and money, errors and the problem+json shape, model fields, JSON parsing and the wire format,
one-statement inserts, throttles and budgets, exchange rates, request ids and logs, task enqueueing and
wake-ups, locks, the metrics registry. `tests/test_architecture.py` keeps it so: an import from `core`
into any app fails the suite.
"""
