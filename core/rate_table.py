"""The price table of the static provider, and what every provider shares: the symbols priced, the
503 when no price is usable, and the parsing of a price.

The static table is the `RATES_STATIC_USD` setting, overlaid per symbol by the JSON file `RATES_FILE`
(var/rates.json) that `manage.py update_rates` writes; edits apply without restart.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import tempfile
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core.assets import normalize_code
from core.errors import DomainError
from core.money import InvalidAmount, check_range, number_text, to_decimal

logger = logging.getLogger("core.rates")  # one logger for the rates, whichever module logs


# Every symbol a provider must price in USD: the invoice currencies other than usd, and the payment codes'
# base assets (usdt prices both trc20usdt and usdterc20).
PRICE_SYMBOLS: tuple[str, ...] = (
    "eur",
    "btc",
    "eth",
    "usdt",
    "usdc",
    "sol",
    "ton",
    "bnb",
    "ltc",
    "trx",
    "bch",
    "near",
)


class RateUnavailable(DomainError):
    status = 503
    code = "rate_unavailable"
    default_detail = "No exchange rate is available right now; try again in a minute."
    retry_after = 60


def parse_price(value: Any) -> Decimal:
    """A USD price from a setting, the rates file or the command line: a positive finite number.

    Floats are refused (write "0.24", not 0.24); raises InvalidAmount.
    """
    price = to_decimal(value)
    if price <= 0:
        raise InvalidAmount("A price must be greater than 0.")
    check_range(price)
    return price


# --- Static table -------------------------------------------------------------------------------------------


class StaticRateProvider:
    """`RATES_STATIC_USD`, overlaid symbol by symbol by the `RATES_FILE` that `update_rates` writes."""

    name = "static"

    def usd_price(self, symbol: str) -> Decimal:
        price = static_prices().get(symbol)
        if price is None:
            raise RateUnavailable(f"The static rate table has no {symbol} price.")
        return price


def static_prices() -> dict[str, Decimal]:
    """The static table in force: the setting, then the rates file's entries over it."""
    table = dict(_setting_table())
    from_file = read_rates_file(rates_file_path())
    if from_file is not None:
        table.update(from_file["usd"])
    return table


def rates_file_path() -> Path:
    return Path(settings.RATES_FILE)


@functools.cache
def _setting_table() -> dict[str, Decimal]:
    raw = settings.RATES_STATIC_USD or {}
    if not isinstance(raw, Mapping):
        raise ImproperlyConfigured("RATES_STATIC_USD must be a dict of symbol -> USD price (a string).")
    table: dict[str, Decimal] = {}
    for key, value in raw.items():
        symbol = normalize_code(key) if isinstance(key, str) else ""
        if symbol not in PRICE_SYMBOLS:
            raise ImproperlyConfigured(f"RATES_STATIC_USD: unknown symbol {key!r}; known: {PRICE_SYMBOLS}.")
        try:
            table[symbol] = parse_price(value)
        except InvalidAmount as exc:
            raise ImproperlyConfigured(f"RATES_STATIC_USD[{key!r}]: {exc}") from exc
    return table


# Parsed file per path, keyed by (mtime, size, inode): update_rates replaces the file (new inode), so even
# two writes within one mtime tick are told apart, and a hand edit applies on the next call.
_file_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
_file_lock = threading.Lock()


def read_rates_file(path: Path) -> dict[str, Any] | None:
    """{"usd": {symbol: Decimal}, "source": str, "updatedAt": str}, or None when there is no file.

    A file that is there but unreadable is a RateUnavailable: falling back to the setting's (older,
    perhaps far older) figures without anyone noticing would price invoices wrongly.
    """
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    with _file_lock:
        cached = _file_cache.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        parsed = _parse_rates_file(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.error("rates: %s is unusable: %s", path, exc)
        raise RateUnavailable(f"The rates file is unusable: {exc}") from exc
    with _file_lock:
        _file_cache[str(path)] = (key, parsed)
    return parsed


def _parse_rates_file(raw: bytes) -> dict[str, Any]:
    data = json.loads(raw, parse_float=Decimal, parse_constant=_refuse_constant)
    if not isinstance(data, dict) or not isinstance(data.get("usd"), dict):
        raise ValueError('expected {"usd": {symbol: price, ...}}')
    prices: dict[str, Decimal] = {}
    for symbol, value in data["usd"].items():
        if symbol not in PRICE_SYMBOLS:
            raise ValueError(f"unknown symbol {symbol!r}")
        try:
            prices[symbol] = parse_price(value)
        except InvalidAmount as exc:
            raise ValueError(f"{symbol}: {exc}") from exc
    return {"usd": prices, "source": str(data.get("source", "")), "updatedAt": str(data.get("updatedAt", ""))}


def write_rates_file(path: Path, prices: Mapping[str, Decimal], *, source: str) -> None:
    """Replace the rates file atomically: readers see the old file or the new one, never half of one."""
    body = {
        "source": source,
        "updatedAt": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "usd": {symbol: number_text(prices[symbol]) for symbol in PRICE_SYMBOLS if symbol in prices},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(body, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, 0o644)  # mkstemp makes it 0600; web and worker may run as other users
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a price")
