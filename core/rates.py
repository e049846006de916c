"""Exchange rates: invoice currency -> payment code, every pair through USD (locked at fill).

A provider knows one thing: `usd_price(symbol)`, the USD price of one unit of a symbol (`PRICE_SYMBOLS`).
`rate(from_currency, to_code)` divides two of them, so crypto-to-crypto (btc -> eth) and fiat-to-crypto
(eur -> btc) are the same computation. Providers:

- `StaticRateProvider` ("static", the default): the `RATES_STATIC_USD` setting, overlaid per symbol by the
  JSON file `RATES_FILE` (var/rates.json) that `manage.py update_rates` writes; edits apply without restart.
- `HttpRateProvider` ("http"): a public market-data API in CoinGecko's `/simple/price` format, one request
  for every symbol, shared through Django's cache (Redis in production) and backed by a last-good copy.
- any class named by a dotted path in `RATES_PROVIDER`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from decimal import ROUND_DOWN, Decimal, localcontext
from typing import Any, Protocol

import requests
import urllib3.exceptions
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from core.assets import get_asset, normalize_code, price_decimals
from core.errors import UnsupportedCurrency
from core.money import MONEY_CONTEXT, InvalidAmount, quantize
from core.rate_table import (  # noqa: F401 - the rates API, re-exported
    PRICE_SYMBOLS,
    RateUnavailable,
    StaticRateProvider,
    _file_cache,
    _file_lock,
    _refuse_constant,
    _setting_table,
    parse_price,
    rates_file_path,
    read_rates_file,
    static_prices,
    write_rates_file,
)

logger = logging.getLogger(__name__)


# Rounding of a rate: DOWN (truncation), at 18 decimal places. 18 places because the rate is stored in the
# invoice's DecimalField(36, 18) column and shown as `paymentDetails.rate`. DOWN because the caller rounds
# total x rate UP to the asset's display decimals: with a truncated rate an exact conversion stays exact
# (92000 USD at 92000 USD/BTC is due as 1.00000000 BTC), where a rate rounded up by 1e-18 would tip the
# product past the display step and ask for 1.00000001. The cost is bounded: the merchant is never short
# of total x the published (locked) rate, and against the untruncated market rate the amount due can fall
# short by less than total x 1e-18 of the payment asset (under 1e-12 BTC on a 1,000,000 USD invoice), i.e.
# relatively < 1e-12 for every rate >= 1e-6 (the smallest real one today, trx -> btc, is ~2.6e-6).
RATE_DECIMALS = 18
RATE_ROUNDING = ROUND_DOWN
# Below this a rate keeps fewer than 9 significant digits at 18 places: a broken price table, not a market.
MIN_RATE = Decimal("1e-9")


class RateProvider(Protocol):
    name: str

    def usd_price(self, symbol: str) -> Decimal:
        """USD per one unit of `symbol` (one of PRICE_SYMBOLS, never "usd"); raises RateUnavailable."""
        ...


# --- Public functions ---------------------------------------------------------------------------------------


def rate(from_currency: str, to_code: str) -> Decimal:
    """Units of `to_code`'s base asset that one unit of the invoice currency buys, truncated at 18 places.

    Raises UnsupportedCurrency / UnsupportedAsset (400) for unknown inputs, RateUnavailable (503) when the
    provider has no usable price.
    """
    price_decimals(from_currency)  # refuses anything that is not an invoice currency
    currency = normalize_code(from_currency)
    base = get_asset(to_code).base
    if currency == base:
        return Decimal(1)  # usdt -> trc20usdt, btc -> btc: no market involved, exact
    provider = get_provider()
    with localcontext(MONEY_CONTEXT):
        exact = _usd_price(provider, currency) / _usd_price(provider, base)
    if exact < MIN_RATE:
        logger.error(
            "rates: %s -> %s is %s, below %s; check the price table", currency, base, exact, MIN_RATE
        )
        raise RateUnavailable(f"The {currency} -> {base} rate is too small to be right.")
    try:
        return quantize(exact, decimals=RATE_DECIMALS, rounding=RATE_ROUNDING)
    except InvalidAmount as exc:  # more than 18 integer digits: a broken table again
        logger.error("rates: %s -> %s is %s, too large; check the price table", currency, base, exact)
        raise RateUnavailable(f"The {currency} -> {base} rate is too large to be right.") from exc


def usd_price(symbol: str) -> Decimal:
    """USD per one unit of `symbol` ("usd" is 1) from the configured provider."""
    if not isinstance(symbol, str):
        raise UnsupportedCurrency(f"{symbol!r} has no price here.")
    return _usd_price(get_provider(), normalize_code(symbol))


def get_provider() -> RateProvider:
    """The provider named by `RATES_PROVIDER`; one instance per setting value."""
    return _provider(settings.RATES_PROVIDER or "static")


# --- Provider selection -------------------------------------------------------------------------------------


def _usd_price(provider: RateProvider, symbol: str) -> Decimal:
    if symbol == "usd":
        return Decimal(1)
    if symbol not in PRICE_SYMBOLS:
        raise UnsupportedCurrency(f"{symbol[:40]!r} has no price here.")
    value = provider.usd_price(symbol)
    # A custom provider is outside code: a float or a zero must become a 503, not a wrong invoice.
    if not isinstance(value, Decimal) or not value.is_finite() or value <= 0:
        logger.error("rates: provider %r gave %r for %s", getattr(provider, "name", provider), value, symbol)
        raise RateUnavailable(f"The rate provider gave no usable {symbol} price.")
    return value


@functools.cache
def _provider(spec: str) -> RateProvider:
    if spec == "static":
        return StaticRateProvider()
    if spec == "http":
        return HttpRateProvider()
    try:
        target = import_string(spec)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"RATES_PROVIDER must be 'static', 'http' or a dotted path; {spec!r} does not import."
        ) from exc
    provider = target() if isinstance(target, type) else target
    if not callable(getattr(provider, "usd_price", None)):
        raise ImproperlyConfigured(f"RATES_PROVIDER {spec!r} has no usd_price(symbol) method.")
    return provider  # type: ignore[no-any-return]


@receiver(setting_changed)
def _reset(*, setting: str, **kwargs: Any) -> None:
    # override_settings / the pytest `settings` fixture must see a new provider, table or file at once.
    if setting.startswith("RATES_"):
        _provider.cache_clear()
        _setting_table.cache_clear()
        with _file_lock:
            _file_cache.clear()


# --- HTTP (CoinGecko /simple/price format) -----------------------------------------------------------------

COINGECKO_IDS: dict[str, str] = {
    "btc": "bitcoin",
    "eth": "ethereum",
    "usdt": "tether",
    "usdc": "usd-coin",
    "sol": "solana",
    "ton": "the-open-network",
    "bnb": "binancecoin",
    "ltc": "litecoin",
    "trx": "tron",
    "bch": "bitcoin-cash",
    "near": "near",
}
# The API prices coins, not currencies: EUR comes from a coin quoted in both (1 EUR = usd / eur USD).
# Bitcoin first: its large quotes carry the most significant digits; tether if bitcoin lacks either.
_EUR_REFERENCE_IDS = ("bitcoin", "tether")
_CACHE_PREFIX = "rates:v1"
# After a failed fetch, callers get last-good prices (or the 503) for this long instead of each one
# waiting for the same dead API again; never longer than RATES_CACHE_SECONDS.
_FAILURE_BACKOFF_SECONDS = 10
_MAX_BODY_BYTES = 1024 * 1024
USER_AGENT = "Kassa rates"


def _now() -> float:
    return time.time()


class HttpRateProvider:
    """One GET for all symbols, cached `RATES_CACHE_SECONDS`; a symbol's last good price serves a failure
    for up to `RATES_STALE_SECONDS` (logged as a warning), after which the rate is unavailable."""

    name = "http"

    def usd_price(self, symbol: str) -> Decimal:
        entry = self._current()
        text = entry["prices"].get(symbol)
        if text is not None:
            return Decimal(text)
        reason = entry["error"] or f"no usable {symbol} price in the answer"
        kept = (cache.get(self._key("last-good")) or {}).get(symbol)
        stale_seconds = settings.RATES_STALE_SECONDS
        if kept is not None and _now() - kept[1] <= stale_seconds:
            logger.warning(
                "rates: using the %s price from %d s ago (%s)", symbol, int(_now() - kept[1]), reason
            )
            return Decimal(kept[0])
        raise RateUnavailable(f"No {symbol} price is available: {reason}.")

    def fetch(self) -> dict[str, Decimal]:
        """Ask the API once, bypassing the cache; the symbols it priced usably (RateUnavailable if none)."""
        url = f"{_base_url()}/simple/price"
        params = {"ids": ",".join(COINGECKO_IDS.values()), "vs_currencies": "usd,eur"}
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        api_key = settings.RATES_HTTP_API_KEY
        if api_key:
            headers["x-cg-demo-api-key"] = api_key
        connect = settings.RATES_HTTP_CONNECT_TIMEOUT_SECONDS
        total = settings.RATES_HTTP_TIMEOUT_SECONDS
        t0 = time.monotonic()
        try:
            # The read timeout bounds each wait for bytes; the clock check below bounds a slow trickle.
            with requests.get(
                url,
                params=params,
                headers=headers,
                timeout=(connect, total),
                allow_redirects=False,
                stream=True,
            ) as response:
                status = response.status_code
                body = response.raw.read(_MAX_BODY_BYTES + 1, decode_content=True) or b""
        except (requests.Timeout, urllib3.exceptions.TimeoutError) as exc:
            raise RateUnavailable(f"The rate API timed out (connect {connect} s, total {total} s).") from exc
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise RateUnavailable(f"The rate API could not be reached ({exc.__class__.__name__}).") from exc
        if time.monotonic() - t0 > total:
            raise RateUnavailable(f"The rate API answered after more than {total} s.")
        if status != 200:
            raise RateUnavailable(f"The rate API answered HTTP {status}.")
        if len(body) > _MAX_BODY_BYTES:
            raise RateUnavailable("The rate API answer is too large.")
        try:
            # Decimal straight from the JSON text: a float would already have changed the price.
            data = json.loads(body, parse_float=Decimal, parse_constant=_refuse_constant)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError both
            raise RateUnavailable("The rate API answer is not valid JSON.") from exc
        if not isinstance(data, dict):
            raise RateUnavailable("The rate API answer is not a JSON object.")
        prices = _prices_from_answer(data)
        if not prices:
            raise RateUnavailable("The rate API answer holds no usable price.")
        return prices

    def _current(self) -> dict[str, Any]:
        """The cached answer {"prices": {symbol: str}, "error": str}, fetching when it has expired."""
        fresh_key = self._key("fresh")
        entry = cache.get(fresh_key)
        if entry is not None:
            return entry  # type: ignore[no-any-return]
        cache_seconds = settings.RATES_CACHE_SECONDS
        try:
            prices = self.fetch()
        except RateUnavailable as exc:
            logger.warning("rates: fetching %s failed: %s", _base_url(), exc.detail)
            entry = {"prices": {}, "error": exc.detail}
            backoff = min(_FAILURE_BACKOFF_SECONDS, cache_seconds)
            if backoff > 0:
                cache.set(fresh_key, entry, backoff)
            return entry
        missing = [symbol for symbol in PRICE_SYMBOLS if symbol not in prices]
        if missing:
            logger.warning("rates: %s gave no usable price for %s", _base_url(), ", ".join(missing))
        entry = {"prices": {symbol: str(price) for symbol, price in prices.items()}, "error": ""}
        if cache_seconds > 0:
            cache.set(fresh_key, entry, cache_seconds)
        self._remember(entry["prices"])
        return entry

    def _remember(self, prices: dict[str, str]) -> None:
        # Per symbol with its own time: a symbol missing from later answers must age out on its own.
        key = self._key("last-good")
        kept = dict(cache.get(key) or {})
        now = _now()
        kept.update({symbol: (text, now) for symbol, text in prices.items()})
        stale_seconds = settings.RATES_STALE_SECONDS
        if stale_seconds > 0:
            cache.set(key, kept, stale_seconds)

    def _key(self, kind: str) -> str:
        # The URL is in the key: switching APIs must not serve the other one's prices.
        digest = hashlib.sha256(_base_url().encode()).hexdigest()[:16]
        return f"{_CACHE_PREFIX}:{digest}:{kind}"


def _prices_from_answer(data: dict[str, Any]) -> dict[str, Decimal]:
    prices: dict[str, Decimal] = {}
    for symbol, coin in COINGECKO_IDS.items():
        price = _quote(data, coin, "usd")
        if price is not None:
            prices[symbol] = price
    for coin in _EUR_REFERENCE_IDS:
        in_usd, in_eur = _quote(data, coin, "usd"), _quote(data, coin, "eur")
        if in_usd is not None and in_eur is not None:
            with localcontext(MONEY_CONTEXT):
                prices["eur"] = in_usd / in_eur
            break
    return prices


def _quote(data: dict[str, Any], coin: str, currency: str) -> Decimal | None:
    quotes = data.get(coin)
    if not isinstance(quotes, dict):
        return None
    value = quotes.get(currency)
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        return None  # a string or null is not the documented format
    try:
        return parse_price(value)
    except InvalidAmount:
        return None


def _base_url() -> str:
    return str(settings.RATES_HTTP_URL).rstrip("/")
