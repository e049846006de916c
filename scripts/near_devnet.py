"""The NEAR stub for trying Kassa's near backend by hand (docs/near.md, the walk-through): development only.

Against the JSON-RPC stub of the tests (`make near-devnet`: nearcore's documented answers over a small chain
in process, not a NEAR node), whose faucet pays as a customer's wallet does:

    .venv/bin/python scripts/near_devnet.py setup      # make and fund the hot account, print the environment
    .venv/bin/python scripts/near_devnet.py pay ACCOUNT AMOUNT [--contract]
    .venv/bin/python scripts/near_devnet.py balance ACCOUNT

It works only against the stub (its faucet is a stub control, /devnet/...). The hot account is the implicit
account of `CHAIN_XPUBS["near"]` in the environment, or of the public development key, which anyone can spend.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

import django

django.setup()

from devnet_http import call  # noqa: E402  (beside this script)

from chains.near.config import hot_public_key  # noqa: E402
from chains.near.transaction import implicit_account  # noqa: E402
from chains.near.units import from_yocto, to_yocto  # noqa: E402
from core.money import number_text  # noqa: E402

HOT_FUNDS = Decimal(100)  # NEAR the hot account gets: withdrawals and their gas leave from it


def _call(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    return call(url, path, body, chain="NEAR", start="near-devnet")


def setup(url: str) -> None:
    key = hot_public_key()
    hot = implicit_account(key)
    _call(
        url,
        "devnet/account",
        {"account_id": hot, "balance": str(to_yocto(HOT_FUNDS)), "public_key": key.hex()},
    )
    info = _call(url, "devnet/info")
    print(f"# hot account {hot} made with {HOT_FUNDS} NEAR; the customer is {info['faucet']}")
    print("export CHAIN_BACKENDS='" + json.dumps({"near": "near"}) + "'")
    print("export CHAIN_NODES='" + json.dumps({"near": {"url": url, "network": "private"}}) + "'")
    print("export CHAIN_POLL_SECONDS=3")


def pay(url: str, to: str, amount: Decimal, contract: bool) -> None:
    body = {"to": to, "amount": str(to_yocto(amount))}
    print(json.dumps(_call(url, "devnet/contract_transfer" if contract else "devnet/transfer", body)))


def balance(url: str, account: str) -> None:
    print(number_text(from_yocto(int(_call(url, f"devnet/balance/{account}")["amount"]))))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:3030", help="the stub (make near-devnet)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("setup", help="make and fund the hot account, print the environment")
    paying = commands.add_parser("pay", help="the stub's faucet pays ACCOUNT")
    paying.add_argument("account")
    paying.add_argument("amount", type=Decimal)
    paying.add_argument("--contract", action="store_true", help="through pay.devnet: a receipt blocks later")
    reading = commands.add_parser("balance", help="what ACCOUNT holds, in NEAR")
    reading.add_argument("account")
    options = parser.parse_args()
    url = options.url.rstrip("/")
    if options.command == "setup":
        setup(url)
    elif options.command == "pay":
        pay(url, options.account, options.amount, options.contract)
    else:
        balance(url, options.account)


if __name__ == "__main__":
    main()
