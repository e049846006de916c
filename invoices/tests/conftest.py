import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def fixed_rates(settings, tmp_path):
    """Round USD prices so expected amounts are exact; no rates file from the developer's var/."""
    settings.RATES_PROVIDER = "static"
    settings.RATES_STATIC_USD = {
        "eur": "1.25",
        "btc": "100000",
        "eth": "2500",
        "usdt": "1",
        "usdc": "1",
        "sol": "200",
        "ton": "5",
        "bnb": "500",
        "ltc": "100",
        "trx": "0.25",
        "bch": "400",
        "near": "5",
    }
    settings.RATES_FILE = str(tmp_path / "no-rates.json")
    settings.INVOICE_FEE_PERCENT = "1"
    cache.clear()
    yield
    cache.clear()
