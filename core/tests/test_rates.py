"""Rates: the static table and its command, the HTTP provider against a local stub (never the internet)."""

import json
import logging
import os
import threading
from decimal import ROUND_DOWN, ROUND_UP, Decimal, localcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command

from core import rates
from core.errors import UnsupportedAsset, UnsupportedCurrency
from core.money import MONEY_CONTEXT, quantize
from core.rates import (
    MIN_RATE,
    PRICE_SYMBOLS,
    RATE_DECIMALS,
    RATE_ROUNDING,
    HttpRateProvider,
    RateUnavailable,
    StaticRateProvider,
    get_provider,
    rate,
    usd_price,
)

TABLE = {
    "eur": "1.08",
    "btc": "92000",
    "eth": "3100",
    "usdt": "1",
    "usdc": "1",
    "sol": "140",
    "ton": "5.4",
    "bnb": "610",
    "ltc": "85",
    "trx": "0.24",
    "bch": "420",
    "near": "4.8",
}


@pytest.fixture(autouse=True)
def _isolated(settings, tmp_path):
    cache.clear()
    settings.RATES_PROVIDER = "static"
    settings.RATES_STATIC_USD = dict(TABLE)
    settings.RATES_FILE = tmp_path / "rates.json"  # never the real var/rates.json
    settings.RATES_CACHE_SECONDS = 60
    settings.RATES_STALE_SECONDS = 3600
    settings.RATES_HTTP_API_KEY = ""
    yield
    cache.clear()


def _exact(numerator: str, denominator: str) -> Decimal:
    with localcontext(MONEY_CONTEXT):
        return Decimal(numerator) / Decimal(denominator)


def _run(*args: str) -> str:
    out = StringIO()
    call_command("update_rates", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


class _CountingProvider:
    name = "counting"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def usd_price(self, symbol: str) -> Decimal:
        self.calls.append(symbol)
        return Decimal(TABLE[symbol])


# --- rate(): identity, static table, precision -------------------------------------------------------------


@pytest.mark.parametrize(
    ("currency", "code"),
    [("usdt", "trc20usdt"), ("usdt", "usdterc20"), ("btc", "btc"), ("USDC", "usdc"), ("trx", "TRX")],
)
def test_same_base_asset_is_exactly_one_without_asking_the_provider(currency, code, monkeypatch):
    provider = _CountingProvider()
    monkeypatch.setattr(rates, "get_provider", lambda: provider)

    result = rate(currency, code)

    assert result == 1
    assert str(result) == "1"
    assert provider.calls == []


@pytest.mark.parametrize(
    ("currency", "code", "expected"),
    [
        ("usd", "trc20usdt", Decimal("1")),
        ("usd", "usdc", Decimal("1")),
        ("eur", "trc20usdt", Decimal("1.08")),
        ("eur", "usdterc20", Decimal("1.08")),
        ("usd", "eth", Decimal("0.000322580645161290")),  # 1/3100 = 0.000322580645161290322...
        ("usd", "btc", Decimal("0.000010869565217391")),  # 1/92000 = 0.0000108695652173913043...
        ("btc", "eth", Decimal("29.677419354838709677")),  # 92000/3100 through USD
        ("eth", "btc", Decimal("0.033695652173913043")),  # 3100/92000 = 0.0336956521739130434...
        ("btc", "trx", Decimal("383333.333333333333333333")),
        ("trx", "btc", Decimal("0.000002608695652173")),
        ("ton", "sol", Decimal("0.038571428571428571")),  # 5.4/140 = 0.03857142857142857142...
        ("usdt", "near", Decimal("0.208333333333333333")),
        ("sol", "bnb", Decimal("0.229508196721311475")),
        ("eur", "btc", Decimal("0.000011739130434782")),  # 1.08/92000 = 0.0000117391304347826...
    ],
)
def test_static_rates_go_through_usd_and_are_truncated_at_18_places(currency, code, expected):
    result = rate(currency, code)

    assert result == expected
    assert result.as_tuple().exponent == -RATE_DECIMALS


def test_rounding_rule_is_down_at_18_places_within_1e_18_of_the_exact_rate():
    assert (RATE_DECIMALS, RATE_ROUNDING) == (18, ROUND_DOWN)

    for currency in ("usd", "eur", "btc", "eth", "trx", "ton", "sol"):
        for code in ("btc", "eth", "trc20usdt", "sol", "ton", "bnb", "ltc", "trx", "bch", "near"):
            base = rates.get_asset(code).base
            if base == currency:
                continue
            exact = _exact(TABLE.get(currency, "1"), TABLE[base])

            result = rate(currency, code)

            assert result <= exact < result + Decimal("1e-18"), (currency, code)


def test_rate_exact_at_18_places_is_not_rounded(settings):
    settings.RATES_STATIC_USD = {**TABLE, "btc": "80000", "eth": "2000"}

    assert rate("btc", "eth") == Decimal("40")
    assert rate("eth", "btc") == Decimal("0.025")


@pytest.mark.parametrize(
    ("currency", "total", "code", "due"),
    [
        ("usd", "92000", "btc", "1.00000000"),
        ("usd", "3100", "eth", "1.00000000"),
        ("eur", "1150", "btc", "0.01350000"),  # 1150 x 1.08 / 92000 = 0.0135
        ("usd", "1400", "sol", "10.000000"),
        ("btc", "1", "trx", "383333.333334"),  # not a round conversion: the display rounding goes up
        ("usd", "1", "btc", "0.00001087"),
        ("ton", "2.7", "sol", "0.104143"),  # 2.7 x 5.4 / 140 = 0.10414285...
    ],
)
def test_amount_due_as_the_caller_computes_it_is_exact_for_round_conversions(currency, total, code, due):
    # invoices.services rounds total x rate UP to the display decimals; the rate's own rounding must not tip
    # an exact product over a display step (1.00000001 BTC for 92000 USD at 92000 USD/BTC).
    display = rates.get_asset(code).display_decimals

    with localcontext(MONEY_CONTEXT):
        result = quantize(Decimal(total) * rate(currency, code), decimals=display, rounding=ROUND_UP)

    assert result == Decimal(due)
    assert str(result) == due


def test_rate_below_the_minimum_is_unavailable_not_silently_rounded(settings):
    settings.RATES_STATIC_USD = {**TABLE, "btc": "1000000000", "trx": "0.24"}

    assert _exact("0.24", "1000000000") < MIN_RATE
    with pytest.raises(RateUnavailable):
        rate("trx", "btc")


def test_unknown_inputs_are_400_errors_not_503():
    with pytest.raises(UnsupportedCurrency):
        rate("gbp", "btc")
    with pytest.raises(UnsupportedAsset):
        rate("usd", "doge")
    with pytest.raises(UnsupportedCurrency):
        usd_price("gbp")


def test_usd_price_of_usd_is_one_and_others_come_from_the_table():
    assert usd_price("usd") == 1
    assert usd_price("BTC") == Decimal("92000")
    assert usd_price("trx") == Decimal("0.24")


def test_missing_symbol_in_static_table_is_unavailable(settings):
    settings.RATES_STATIC_USD = {"btc": "92000"}

    with pytest.raises(RateUnavailable) as caught:
        rate("usd", "eth")

    assert (caught.value.status, caught.value.code) == (503, "rate_unavailable")


@pytest.mark.parametrize(
    "table",
    [{"btc": 92000.5}, {"btc": "0"}, {"btc": "-1"}, {"btc": "nan"}, {"doge": "0.1"}, {"btc": "abc"}],
)
def test_bad_static_setting_is_a_configuration_error(settings, table):
    settings.RATES_STATIC_USD = table

    with pytest.raises(ImproperlyConfigured):
        usd_price("btc")


def test_custom_provider_returning_a_float_is_unavailable(monkeypatch):
    class FloatProvider:
        name = "float"

        def usd_price(self, symbol: str) -> Decimal:
            return 92000.0  # type: ignore[return-value]

    monkeypatch.setattr(rates, "get_provider", lambda: FloatProvider())

    with pytest.raises(RateUnavailable):
        rate("usd", "btc")


def test_get_provider_follows_the_setting(settings):
    assert isinstance(get_provider(), StaticRateProvider)
    assert get_provider() is get_provider()

    settings.RATES_PROVIDER = "http"
    assert isinstance(get_provider(), HttpRateProvider)

    settings.RATES_PROVIDER = "core.rates.StaticRateProvider"
    assert isinstance(get_provider(), StaticRateProvider)

    settings.RATES_PROVIDER = "core.rates.NoSuchProvider"
    with pytest.raises(ImproperlyConfigured):
        get_provider()


def test_rate_unavailable_renders_as_problem_json_503():
    from core.errors import problem_exception_handler

    response = problem_exception_handler(RateUnavailable(), {})

    assert response is not None
    assert response.status_code == 503
    assert response.data["code"] == "rate_unavailable"


# --- update_rates command -------------------------------------------------------------------------------


def test_update_rates_set_writes_the_file_and_the_provider_picks_it_up(settings):
    assert rate("usd", "btc") == Decimal("0.000010869565217391")

    _run("--set", "btc=95000", "--set", "ETH=3200.5")

    written = json.loads(settings.RATES_FILE.read_text())
    assert written["usd"] == {"btc": "95000", "eth": "3200.5"}
    assert written["source"] == "manual"
    assert usd_price("btc") == Decimal("95000")
    assert rate("usd", "btc") == Decimal("0.000010526315789473")  # 1/95000 = 0.0000105263157894736...
    assert rate("btc", "eth") == Decimal("29.682862052804249336")  # 95000/3200.5 = 29.68286205280424933604...
    assert usd_price("sol") == Decimal("140")  # not in the file: the setting still applies


def test_update_rates_set_twice_keeps_earlier_entries_and_applies_at_once(settings):
    _run("--set", "btc=95000")

    _run("--set", "btc=96000", "--set", "trx=0.25")

    assert json.loads(settings.RATES_FILE.read_text())["usd"] == {"btc": "96000", "trx": "0.25"}
    assert usd_price("btc") == Decimal("96000")  # replaced within the same mtime tick: inode tells apart
    assert usd_price("trx") == Decimal("0.25")


@pytest.mark.parametrize(
    "assignment",
    ["btc", "btc=", "btc=0", "btc=-5", "btc=nan", "btc=inf", "btc=1_000", "doge=1", "usd=1", "btc=1e40"],
)
def test_update_rates_refuses_bad_input_and_leaves_the_file_unchanged(settings, assignment):
    _run("--set", "btc=95000")
    before = settings.RATES_FILE.read_bytes()

    with pytest.raises(CommandError):
        _run("--set", "eth=3200", "--set", assignment)

    assert settings.RATES_FILE.read_bytes() == before
    assert usd_price("eth") == Decimal("3100")
    assert os.listdir(settings.RATES_FILE.parent) == ["rates.json"]  # no temp file left behind


def test_update_rates_refuses_the_same_symbol_twice(settings):
    with pytest.raises(CommandError):
        _run("--set", "btc=1", "--set", "btc=2")

    assert not settings.RATES_FILE.exists()


def test_update_rates_show_lists_the_table_and_each_origin():
    _run("--set", "btc=95000")

    out = json.loads(_run("--show", "--json"))

    assert list(out["usd"]) == list(PRICE_SYMBOLS)
    assert out["usd"]["btc"] == "95000"
    assert out["from"]["btc"] == "file"
    assert out["from"]["eth"] == "settings"
    assert "btc" in _run("--show")


def test_a_broken_rates_file_makes_rates_unavailable_rather_than_falling_back(settings):
    settings.RATES_FILE.write_text('{"usd": {"btc": 92000.5e400')

    with pytest.raises(RateUnavailable):
        rate("usd", "btc")
    with pytest.raises(CommandError):
        _run("--set", "btc=1")


@pytest.mark.parametrize(
    "body",
    ['{"usd": {"btc": "0"}}', '{"usd": {"doge": "1"}}', '{"usd": {"btc": NaN}}', "[]", '{"usd": []}'],
)
def test_invalid_rates_file_contents_are_refused(settings, body):
    settings.RATES_FILE.write_text(body)

    with pytest.raises(RateUnavailable):
        usd_price("btc")


# --- HTTP provider against a local stub -----------------------------------------------------------------

# Numbers as their JSON text: a Python float here would already have lost tron's 18th digit.
GECKO = {
    "bitcoin": {"usd": "92000.12", "eur": "85000.5"},
    "ethereum": {"usd": "3100.5", "eur": "2864.1"},
    "tether": {"usd": "1.0003", "eur": "0.9241"},
    "usd-coin": {"usd": "0.9999", "eur": "0.9237"},
    "solana": {"usd": "140.25", "eur": "129.6"},
    "the-open-network": {"usd": "5.41", "eur": "5.0"},
    "binancecoin": {"usd": "610.7", "eur": "564.2"},
    "litecoin": {"usd": "85.3", "eur": "78.8"},
    "tron": {"usd": "0.123456789012345678", "eur": "0.114"},
    "bitcoin-cash": {"usd": "420", "eur": "388"},
    "near": {"usd": "4.8", "eur": "4.43"},
}


def _gecko_text(data: dict) -> str:
    """The API's JSON with the numbers written verbatim (a JSON string stays a string when quoted twice)."""
    coins = []
    for coin, quotes in data.items():
        inner = ", ".join(f'"{currency}": {value}' for currency, value in quotes.items())
        coins.append(f'"{coin}": {{{inner}}}')
    return "{" + ", ".join(coins) + "}"


class Stub:
    """What the stub answers next; `requests` records every request it saw."""

    def __init__(self) -> None:
        self.status = 200
        self.body = _gecko_text(GECKO).encode()
        self.hang = False
        self.requests: list[dict] = []
        self.release = threading.Event()

    def answer(self, body: str | dict, status: int = 200) -> None:
        self.body = (_gecko_text(body) if isinstance(body, dict) else body).encode()
        self.status = status


@pytest.fixture
def stub(settings):
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            state.requests.append(
                {"path": url.path, "query": parse_qs(url.query), "headers": dict(self.headers)}
            )
            if state.hang:
                state.release.wait(5)
                return
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    settings.RATES_PROVIDER = "http"
    settings.RATES_HTTP_URL = f"http://127.0.0.1:{server.server_address[1]}/api/v3"
    settings.RATES_HTTP_CONNECT_TIMEOUT_SECONDS = 1
    settings.RATES_HTTP_TIMEOUT_SECONDS = 2
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()


def test_http_prices_are_parsed_as_exact_decimals(stub):
    assert usd_price("trx") == Decimal("0.123456789012345678")
    assert usd_price("btc") == Decimal("92000.12")
    assert usd_price("bch") == Decimal("420")
    assert usd_price("usdt") == Decimal("1.0003")
    assert usd_price("eur") == _exact("92000.12", "85000.5")  # derived from bitcoin's usd and eur quotes


def test_http_request_asks_for_every_coin_in_usd_and_eur(stub, settings):
    settings.RATES_HTTP_API_KEY = "demo-key"

    usd_price("btc")

    [seen] = stub.requests
    assert seen["path"] == "/api/v3/simple/price"
    assert seen["query"]["vs_currencies"] == ["usd,eur"]
    assert set(seen["query"]["ids"][0].split(",")) == set(rates.COINGECKO_IDS.values())
    assert seen["headers"]["x-cg-demo-api-key"] == "demo-key"


def test_http_api_key_header_is_absent_when_not_configured(stub):
    usd_price("btc")

    assert "x-cg-demo-api-key" not in {name.lower() for name in stub.requests[0]["headers"]}


def test_http_rates_go_through_usd_and_are_truncated(stub):
    assert rate("btc", "eth") == Decimal(
        "29.672672149653281728"
    )  # 92000.12/3100.5 = 29.6726721496532817287...
    assert rate("usd", "trc20usdt") == Decimal("0.999700089973008097")  # 1/1.0003 = 0.9997000899730080975...


def test_many_rates_within_the_cache_time_make_one_request(stub):
    for currency in ("usd", "eur", "btc", "eth", "trx"):
        for code in ("btc", "eth", "trc20usdt", "sol", "ton", "near"):
            rate(currency, code)

    assert len(stub.requests) == 1


def test_rates_are_fetched_again_after_the_cache_expires(stub, settings):
    rate("usd", "btc")
    stub.answer({**GECKO, "bitcoin": {"usd": "100000", "eur": "90000"}})

    cache.delete(HttpRateProvider()._key("fresh"))  # the cache entry expiring
    result = rate("usd", "btc")

    assert len(stub.requests) == 2
    assert result == Decimal("0.00001")


def test_zero_cache_seconds_fetches_every_time(stub, settings):
    settings.RATES_CACHE_SECONDS = 0

    usd_price("btc")
    usd_price("eth")

    assert len(stub.requests) == 2


FAILURES = {
    "server error": lambda stub: stub.answer("oops", status=500),
    "redirect": lambda stub: stub.answer("", status=302),
    "invalid json": lambda stub: stub.answer("{not json"),
    "not an object": lambda stub: stub.answer("[1, 2]"),
    "missing symbol": lambda stub: stub.answer({k: v for k, v in GECKO.items() if k != "bitcoin"}),
    "zero price": lambda stub: stub.answer({**GECKO, "bitcoin": {"usd": "0", "eur": "0"}}),
    "negative price": lambda stub: stub.answer({**GECKO, "bitcoin": {"usd": "-1", "eur": "1"}}),
    "string price": lambda stub: stub.answer({**GECKO, "bitcoin": {"usd": '"92000"'}}),
    "nan price": lambda stub: stub.answer('{"bitcoin": {"usd": NaN}}'),
    "empty object": lambda stub: stub.answer({}),
    "hanging": lambda stub: setattr(stub, "hang", True),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_http_failure_without_last_good_value_is_rate_unavailable(stub, settings, failure):
    settings.RATES_HTTP_TIMEOUT_SECONDS = 0.3
    FAILURES[failure](stub)

    with pytest.raises(RateUnavailable) as caught:
        rate("usd", "btc")

    assert (caught.value.status, caught.value.code) == (503, "rate_unavailable")
    assert len(stub.requests) == 1


@pytest.mark.parametrize("failure", list(FAILURES))
def test_http_failure_uses_the_last_good_value_and_warns(stub, settings, failure, caplog):
    good = rate("usd", "btc")  # with the default timeout: a loaded machine must not fail the good fetch
    settings.RATES_HTTP_TIMEOUT_SECONDS = 0.3  # the "hanging" answer ends here
    cache.delete(HttpRateProvider()._key("fresh"))
    FAILURES[failure](stub)

    with caplog.at_level(logging.WARNING, logger="core.rates"):
        result = rate("usd", "btc")

    assert result == good
    assert len(stub.requests) == 2
    assert any("using the btc price" in record.getMessage() for record in caplog.records)


def test_a_missing_symbol_only_affects_that_symbol(stub):
    stub.answer({k: v for k, v in GECKO.items() if k != "near"})

    assert usd_price("btc") == Decimal("92000.12")
    with pytest.raises(RateUnavailable):
        usd_price("near")


def test_last_good_value_expires_after_the_stale_time(stub, settings, monkeypatch):
    rate("usd", "btc")
    cache.delete(HttpRateProvider()._key("fresh"))
    stub.answer("down", status=503)
    now = rates._now()
    monkeypatch.setattr(rates, "_now", lambda: now + 3601)

    with pytest.raises(RateUnavailable):
        rate("usd", "btc")


def test_a_failure_is_not_retried_by_every_caller_within_the_backoff(stub):
    stub.answer("down", status=503)

    for _ in range(3):
        with pytest.raises(RateUnavailable):
            usd_price("btc")

    assert len(stub.requests) == 1


def test_hanging_api_gives_up_within_the_timeout(stub, settings):
    import time

    settings.RATES_HTTP_TIMEOUT_SECONDS = 0.3
    stub.hang = True
    t0 = time.monotonic()

    with pytest.raises(RateUnavailable):
        usd_price("btc")

    assert time.monotonic() - t0 < 2


def test_a_different_api_url_does_not_share_cached_prices(stub, settings):
    usd_price("btc")
    settings.RATES_HTTP_URL = settings.RATES_HTTP_URL + "/"  # same API, normalised: same key
    usd_price("btc")
    settings.RATES_HTTP_URL = settings.RATES_HTTP_URL.rstrip("/").replace("/api/v3", "/other")
    stub.answer({**GECKO, "bitcoin": {"usd": "50000", "eur": "45000"}})

    assert usd_price("btc") == Decimal("50000")
    assert len(stub.requests) == 2


def test_update_rates_from_http_stores_every_price(stub, settings):
    settings.RATES_PROVIDER = "static"

    _run("--from-http")

    written = json.loads(settings.RATES_FILE.read_text())
    assert written["source"] == "http"
    assert list(written["usd"]) == list(PRICE_SYMBOLS)
    assert written["usd"]["trx"] == "0.123456789012345678"
    assert written["usd"]["bch"] == "420"
    assert usd_price("btc") == Decimal("92000.12")
    assert isinstance(get_provider(), StaticRateProvider)


def test_update_rates_from_http_failure_leaves_the_file_unchanged(stub, settings):
    settings.RATES_PROVIDER = "static"
    _run("--set", "btc=95000")
    before = settings.RATES_FILE.read_bytes()
    stub.answer("oops", status=500)

    with pytest.raises(CommandError):
        _run("--from-http")

    assert settings.RATES_FILE.read_bytes() == before


def test_update_rates_from_http_keeps_symbols_the_api_left_out(stub, settings):
    settings.RATES_PROVIDER = "static"
    _run("--set", "near=5.5")
    stub.answer({k: v for k, v in GECKO.items() if k != "near"})

    _run("--from-http")

    assert usd_price("near") == Decimal("5.5")
    assert usd_price("btc") == Decimal("92000.12")
