"""The TRON devnet for trying Kassa's tron backend by hand (docs/tron.md, the walk-through): development only.

Against the test devnet (`make tron-devnet`, java-tron's HTTP API over an in-process EVM, not java-tron),
with its faucet paying:

    .venv/bin/python scripts/tron_devnet.py setup            # fund the hot address with TRX and the test
                                                             # USDT, print the environment for `make run`
    .venv/bin/python scripts/tron_devnet.py pay ADDRESS AMOUNT [--token]
    .venv/bin/python scripts/tron_devnet.py balance ADDRESS [--token]

It works only against the devnet (its faucet is a devnet control, /devnet/fund): the hot address here is the
public development key's, which anyone can spend.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

import django

django.setup()

from chains.derivation import derive_internal_address  # noqa: E402
from chains.tron.address import to_bytes  # noqa: E402
from chains.tron.units import from_units, to_units  # noqa: E402

DECIMALS = 6  # the devnet's USDT, as Tether's


def _post(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    try:
        response = requests.post(f"{url}/{path}", json=body or {}, timeout=30)
    except requests.RequestException as exc:
        sys.exit(f"no TRON devnet answers at {url} ({exc}); start one first: make tron-devnet")
    if response.status_code != 200:
        sys.exit(f"{url}/{path}: {response.status_code} {response.text[:200]}")
    return response.json()


def _devnet(url: str) -> dict[str, Any]:
    try:
        response = requests.get(f"{url}/devnet/info", timeout=30)
    except requests.RequestException as exc:
        sys.exit(f"no TRON devnet answers at {url} ({exc}); start one first: make tron-devnet")
    if response.status_code != 200:
        sys.exit(f"{url} is not the test devnet (no /devnet/info): refused")
    return response.json()  # type: ignore[no-any-return]


def _fund(url: str, address: str, amount: Decimal, *, token: bool) -> list[str]:
    key = "token" if token else "sun"
    return _post(url, "devnet/fund", {"address": address, key: to_units(amount)})["txids"]  # type: ignore[no-any-return]


def setup(url: str) -> None:
    info = _devnet(url)
    hot = derive_internal_address("tron", 0)
    _fund(url, hot, Decimal(1000), token=False)
    _fund(url, hot, Decimal(1000), token=True)
    node = {"url": url, "network": "private"}
    nodes = {"trx": node, "trc20usdt": dict(node, contract=info["token"]["address"], decimals=DECIMALS)}
    print(
        f"# test USDT at {info['token']['address']}; hot address {hot} funded with 1000 TRX and 1000 USDT "
        "(in the next block)"
    )
    print("export CHAIN_BACKENDS='" + json.dumps({"trx": "tron", "trc20usdt": "tron"}) + "'")
    print("export CHAIN_NODES='" + json.dumps(nodes) + "'")
    print("export CHAIN_POLL_SECONDS=3 TRON_SWEEP_SECONDS=10")


def balance(url: str, address: str, *, token: bool) -> Decimal:
    info = _devnet(url)
    if not token:
        account = _post(url, "wallet/getaccount", {"address": address, "visible": True})
        return from_units(int(account.get("balance", 0)))
    body = {
        "owner_address": address,
        "contract_address": info["token"]["address"],
        "function_selector": "balanceOf(address)",
        "parameter": to_bytes(address)[1:].hex().rjust(64, "0"),  # balanceOf(address)
        "visible": True,
    }
    answer = _post(url, "wallet/triggerconstantcontract", body)
    return from_units(int(answer["constant_result"][0], 16), DECIMALS)


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--url", default="http://127.0.0.1:8090")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("setup")
    pay = commands.add_parser("pay")
    pay.add_argument("address")
    pay.add_argument("amount", type=Decimal)
    pay.add_argument("--token", action="store_true", help="the test USDT, not TRX")
    held = commands.add_parser("balance")
    held.add_argument("address")
    held.add_argument("--token", action="store_true")
    options = parser.parse_args()
    if options.command == "setup":
        setup(options.url)
    elif options.command == "pay":
        _devnet(options.url)
        print(_fund(options.url, options.address, options.amount, token=options.token)[0])
    else:
        print(balance(options.url, options.address, token=options.token))


if __name__ == "__main__":
    main()
