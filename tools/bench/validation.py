"""The in-process cost of checking the usual invoice-create and one-item withdrawal bodies, in microseconds:
a new serializer's `is_valid` (what DRF does by default), one kept instance's `run_validation`, the compiled
check alone, and `validated` (core.api.validation). No database, no network; the best of several rounds.

    .venv/bin/python -m tools.bench.validation   # tools.bench.settings unless DJANGO_SETTINGS_MODULE says
"""

from __future__ import annotations

import json
import os
import timeit
from collections.abc import Callable
from functools import partial
from typing import Any

ROUNDS = 9
LTC_ADDRESS = "LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA"
USUAL = [
    (
        "invoice create",
        "invoices.api.serializers.InvoiceCreateInputSerializer",
        '{"invoiceCurrency":"USD","items":[{"name":"T-shirt","price":"12.50"}],"isMerchantPaysFee":false}',
    ),
    (
        "withdrawal, one item",
        "withdrawals.api.serializers.WithdrawInputSerializer",
        f'{{"items":[{{"amount":"0.5","to":"{LTC_ADDRESS}","asset":"ltc"}}]}}',
    ),
]


def _microseconds(call: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=ROUNDS)) / number * 1e6


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tools.bench.settings")
    import django

    django.setup()
    from django.utils.module_loading import import_string

    from core.api.validation import UNVOUCHED, compiled, validated

    for name, path, text in USUAL:
        serializer_class, data = import_string(path), json.loads(text)
        check = compiled(serializer_class)
        assert check is not None and check(data) is not UNVOUCHED, "the usual body takes the compiled check"
        kept = serializer_class()

        def fresh(serializer_class: Any = serializer_class, data: Any = data) -> Any:
            serializer = serializer_class(data=data)
            serializer.is_valid(raise_exception=True)
            return serializer.validated_data

        rows = {
            "is_valid, new serializer": _microseconds(fresh, 2_000),
            "run_validation, kept instance": _microseconds(partial(kept.run_validation, data), 5_000),
            "compiled check": _microseconds(partial(check, data), 20_000),
            "validated": _microseconds(partial(validated, serializer_class, data), 20_000),
        }
        print(name)
        for label, figure in rows.items():
            print(f"  {label:32} {figure:8.1f} µs")


if __name__ == "__main__":
    main()
