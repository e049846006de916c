"""`manage.py update_rates`: maintain the static rate table's file (RATES_FILE, var/rates.json).

    update_rates --set btc=95000 --set eth=3200   set prices by hand (USD per unit)
    update_rates --from-http                      store every price the HTTP API gives now
    update_rates --show                           print the table in force and where each price comes from

The file overlays the `RATES_STATIC_USD` setting symbol by symbol; the running service picks a new file up
on its next rate without a restart. Input is checked in full before anything is written, and the file is
replaced atomically, so a refused command leaves it as it was.
"""

import json
from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.money import InvalidAmount, number_text
from core.rates import (
    PRICE_SYMBOLS,
    HttpRateProvider,
    RateUnavailable,
    parse_price,
    rates_file_path,
    read_rates_file,
    static_prices,
    write_rates_file,
)


class Command(BaseCommand):
    help = "Set, fetch or show the static rate table (USD price per unit) kept in var/rates.json."

    def add_arguments(self, parser: CommandParser) -> None:
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument(
            "--set",
            action="append",
            metavar="SYMBOL=PRICE",
            help=f"USD price of one unit; repeatable. Symbols: {', '.join(PRICE_SYMBOLS)}",
        )
        action.add_argument(
            "--from-http", action="store_true", help="fetch every price once from RATES_HTTP_URL"
        )
        action.add_argument("--show", action="store_true", help="print the table in force")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        path = rates_file_path()
        try:
            current = read_rates_file(path)
        except RateUnavailable as exc:
            raise CommandError(f"{exc.detail} Fix or remove {path} first.") from exc
        kept: dict[str, Decimal] = dict(current["usd"]) if current else {}

        if options["show"]:
            self._show(current, as_json=options["json"])
            return
        if options["set"]:
            changes, source = _parse_assignments(options["set"]), "manual"
        else:
            provider = HttpRateProvider()
            try:
                changes = provider.fetch()
            except RateUnavailable as exc:
                raise CommandError(exc.detail) from exc
            missing = [symbol for symbol in PRICE_SYMBOLS if symbol not in changes]
            if missing:
                self.stderr.write(f"No usable price for {', '.join(missing)}; kept as they were.")
            source = "http"

        write_rates_file(path, {**kept, **changes}, source=source)
        written = {symbol: number_text(price) for symbol, price in changes.items()}
        if options["json"]:
            self.stdout.write(json.dumps({"file": str(path), "source": source, "usd": written}))
            return
        for symbol in PRICE_SYMBOLS:
            if symbol in written:
                self.stdout.write(f"{symbol} {written[symbol]}")
        self.stdout.write(f"written to {path}")

    def _show(self, current: dict[str, Any] | None, *, as_json: bool) -> None:
        try:
            table = static_prices()
        except RateUnavailable as exc:
            raise CommandError(exc.detail) from exc
        from_file = current["usd"] if current else {}
        rows = [
            (symbol, number_text(table[symbol]), "file" if symbol in from_file else "settings")
            for symbol in PRICE_SYMBOLS
            if symbol in table
        ]
        if as_json:
            body = {
                "file": str(rates_file_path()),
                "updatedAt": current["updatedAt"] if current else None,
                "usd": {symbol: price for symbol, price, _ in rows},
                "from": {symbol: origin for symbol, _, origin in rows},
            }
            self.stdout.write(json.dumps(body))
            return
        for symbol, price, origin in rows:
            self.stdout.write(f"{symbol:<5} {price:>24}  {origin}")
        if current:
            self.stdout.write(f"file {rates_file_path()} ({current['source']}, {current['updatedAt']})")


def _parse_assignments(assignments: list[str]) -> dict[str, Decimal]:
    changes: dict[str, Decimal] = {}
    for assignment in assignments:
        symbol, sep, value = assignment.partition("=")
        symbol = symbol.strip().lower()
        if not sep:
            raise CommandError(f"--set {assignment!r}: expected SYMBOL=PRICE, e.g. btc=95000.")
        if symbol not in PRICE_SYMBOLS:
            raise CommandError(f"--set {assignment!r}: unknown symbol; known: {', '.join(PRICE_SYMBOLS)}.")
        if symbol in changes:
            raise CommandError(f"--set names {symbol} twice.")
        try:
            changes[symbol] = parse_price(value)
        except InvalidAmount as exc:
            raise CommandError(f"--set {assignment!r}: {exc}") from exc
    return changes
