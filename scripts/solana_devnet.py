"""The Solana devnet for trying Kassa's solana backend by hand (docs/solana.md, the walk-through): development
only.

Against the test devnet (`make solana-devnet`: Solana's JSON-RPC over LiteSVM, not a validator), whose faucet
funds the receiving (hot) wallet and whose customer pays as a Solana Pay wallet does:

    .venv/bin/python scripts/solana_devnet.py setup    # fund the hot wallet, print the environment
    .venv/bin/python scripts/solana_devnet.py pay ADDRESS AMOUNT [--reference KEY] [--memo TEXT]
    .venv/bin/python scripts/solana_devnet.py balance ADDRESS

It works only against the devnet (its faucet and customer are devnet controls, /devnet/...). The hot wallet
is `CHAIN_XPUBS["sol"]` in the environment, or the public development key's, which anyone can spend.
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

from chains.solana.keys import receiving_address  # noqa: E402
from chains.solana.units import from_lamports, to_lamports  # noqa: E402

HOT_FUNDS = Decimal(100)  # SOL the hot wallet gets: withdrawals and their fees leave from it


def _call(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    return call(url, path, body, chain="Solana", start="solana-devnet")


def _rpc(url: str, method: str, params: list[Any]) -> Any:
    answer = _call(url, "", {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    if "error" in answer:
        sys.exit(f"{method}: {answer['error']}")
    return answer["result"]


def setup(url: str) -> None:
    info = _call(url, "devnet/info")
    hot = receiving_address()
    sent = _call(url, "devnet/airdrop", {"address": hot, "lamports": to_lamports(HOT_FUNDS)})
    if not sent.get("landed"):
        sys.exit(f"the airdrop to {hot} did not land: {sent}")
    print(f"# hot wallet {hot} funded with {HOT_FUNDS} SOL; customer {info['customer']['address']}")
    print("export CHAIN_BACKENDS='" + json.dumps({"sol": "solana"}) + "'")
    print("export CHAIN_NODES='" + json.dumps({"sol": {"url": url, "network": "private"}}) + "'")
    print(f"export CHAIN_POLL_SECONDS=3 SOL_CUSTOMER={info['customer']['address']}")


def pay(url: str, to: str, amount: Decimal, reference: str | None, memo: str | None) -> None:
    body: dict[str, Any] = {"to": to, "lamports": to_lamports(amount)}
    if reference:
        body["references"] = [reference]
    if memo is not None:
        body["memo"] = memo
    print(json.dumps(_call(url, "devnet/pay", body)))


def balance(url: str, address: str) -> None:
    print(from_lamports(int(_rpc(url, "getBalance", [address, {"commitment": "finalized"}])["value"])))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8899", help="the devnet (make solana-devnet)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("setup", help="fund the hot wallet, print the environment")
    paying = commands.add_parser("pay", help="the devnet's customer pays ADDRESS")
    paying.add_argument("address")
    paying.add_argument("amount", type=Decimal)
    paying.add_argument("--reference", help="the Solana Pay reference (an invoice's tag); none if left out")
    paying.add_argument("--memo", help="a memo (the memo program wallets use)")
    reading = commands.add_parser("balance", help="what ADDRESS holds at finalized, in SOL")
    reading.add_argument("address")
    options = parser.parse_args()
    url = options.url.rstrip("/")
    if options.command == "setup":
        setup(url)
    elif options.command == "pay":
        pay(url, options.address, options.amount, options.reference, options.memo)
    else:
        balance(url, options.address)


if __name__ == "__main__":
    main()
