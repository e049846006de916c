"""The TON devnet for trying Kassa's ton backend by hand (docs/ton.md, the walk-through): development only.

Against the test devnet (`make ton-devnet`: toncenter's API v2 over @ton/sandbox, not a TON node), whose
faucet funds the house wallet and whose customer wallet pays:

    .venv/bin/python scripts/ton_devnet.py setup     # fund the house wallet, make a customer wallet, print
                                                     # the environment for `make run`
    .venv/bin/python scripts/ton_devnet.py pay ADDRESS AMOUNT [--comment TEXT]   # from the customer wallet
    .venv/bin/python scripts/ton_devnet.py balance ADDRESS

It works only against the devnet (its faucet and customer are devnet controls, /devnet/...). The house
wallet is the one of `CHAIN_XPUBS["ton"]` in the environment, or the public development key's, which anyone
can spend.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

import django

django.setup()

from devnet_http import call  # noqa: E402  (beside this script)

from chains.ton.keys import house_display  # noqa: E402
from chains.ton.units import from_nanotons, to_nanotons  # noqa: E402

HOUSE_FUNDS = Decimal(100)  # TON the house wallet gets: withdrawals and their fees leave from it
CUSTOMER_FUNDS = Decimal(1000)


def _call(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    return call(url, path, body, chain="TON", start="ton-devnet")


def setup(url: str) -> None:
    _call(url, "devnet/info")
    house = house_display()
    _call(url, "devnet/fund", {"address": house, "amount": str(to_nanotons(HOUSE_FUNDS))})
    customer = _call(url, "devnet/customer", {"balance": str(to_nanotons(CUSTOMER_FUNDS))})["address"]
    print(f"# house wallet {house} funded with {HOUSE_FUNDS} TON; customer {customer} ({CUSTOMER_FUNDS} TON)")
    print("export CHAIN_BACKENDS='" + json.dumps({"ton": "ton"}) + "'")
    print("export CHAIN_NODES='" + json.dumps({"ton": {"url": f"{url}/api/v2", "network": "private"}}) + "'")
    print(f"export CHAIN_POLL_SECONDS=3 TON_CUSTOMER={customer}")


def pay(url: str, to: str, amount: Decimal, comment: str | None) -> None:
    customer = os.environ.get("TON_CUSTOMER")
    if not customer:
        sys.exit("TON_CUSTOMER is not set: run `setup` first and load what it prints")
    body: dict[str, Any] = {"from": customer, "to": to, "amount": str(to_nanotons(amount))}
    if comment is not None:
        body["comment"] = comment
    sent = _call(url, "devnet/pay", body)
    print(json.dumps(sent))


def balance(url: str, address: str) -> None:
    answer = _call(url, f"api/v2/getAddressInformation?address={quote(address)}")
    print(from_nanotons(int(answer["result"]["balance"])))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8081", help="the devnet (make ton-devnet)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("setup", help="fund the house wallet, make a customer, print the environment")
    paying = commands.add_parser("pay", help="the customer wallet pays ADDRESS")
    paying.add_argument("address")
    paying.add_argument("amount", type=Decimal)
    paying.add_argument("--comment", help="the text comment (an invoice's tag); none if left out")
    reading = commands.add_parser("balance", help="what ADDRESS holds, in TON")
    reading.add_argument("address")
    options = parser.parse_args()
    url = options.url.rstrip("/")
    if options.command == "setup":
        setup(url)
    elif options.command == "pay":
        pay(url, options.address, options.amount, options.comment)
    else:
        balance(url, options.address)


if __name__ == "__main__":
    main()
