"""A local EVM chain for trying Kassa's evm backend (docs/evm.md, the walk-through): development only.

Against a hardhat node (`make hardhat`, then `tests/hardhat/node_modules/.bin/hardhat node` in
tests/hardhat), with hardhat's unlocked rich account paying:

    .venv/bin/python scripts/evm_devnet.py setup           # deploy the test USDT, fund the hot address,
                                                           # print the environment for `make run`
    .venv/bin/python scripts/evm_devnet.py pay ADDRESS AMOUNT [--token CONTRACT]
    .venv/bin/python scripts/evm_devnet.py mine [BLOCKS]
    .venv/bin/python scripts/evm_devnet.py balance ADDRESS [--token CONTRACT]

It refuses any chain but hardhat's (31337) and ganache's (1337): the hot address here is the public
development key's, which anyone can spend.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

import django

django.setup()

from web3 import Web3  # noqa: E402
from web3.types import Wei  # noqa: E402

from chains.evm.contracts import TOKEN_ABI, TOKEN_BYTECODE  # noqa: E402
from chains.evm.node import hot_address, to_units  # noqa: E402

DEV_CHAINS = (31337, 1337)


def _w3(url: str) -> Web3:
    w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 30}))
    if not w3.is_connected():
        sys.exit(f"no EVM node answers at {url} (start hardhat first: docs/evm.md)")
    if w3.eth.chain_id not in DEV_CHAINS:
        sys.exit(f"chain {w3.eth.chain_id} is not a local development chain {DEV_CHAINS}: refused")
    return w3


def setup(w3: Web3, url: str) -> None:
    rich = w3.eth.accounts[0]
    factory = w3.eth.contract(abi=TOKEN_ABI, bytecode=TOKEN_BYTECODE)
    receipt = w3.eth.wait_for_transaction_receipt(
        factory.constructor("Tether USD", "USDT", 6).transact({"from": rich})
    )
    token = w3.eth.contract(address=receipt["contractAddress"], abi=TOKEN_ABI)
    w3.eth.wait_for_transaction_receipt(
        token.functions.mint(rich, to_units(Decimal(1_000_000), 6)).transact({"from": rich})
    )
    hot = hot_address()
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": rich, "to": hot, "value": Wei(10 * 10**18)})
    )
    w3.eth.wait_for_transaction_receipt(
        token.functions.transfer(hot, to_units(Decimal(1000), 6)).transact({"from": rich})
    )
    common = {"url": url, "chain_id": w3.eth.chain_id}
    nodes = {
        "eth": dict(common, sweep_min="0.001"),
        "usdterc20": dict(common, contract=token.address, decimals=6, sweep_min="1"),
    }
    print(f"# test USDT deployed at {token.address}; hot address {hot} holds 10 ETH and 1000 USDT")
    print("export CHAIN_BACKENDS='" + json.dumps({"eth": "evm", "usdterc20": "evm"}) + "'")
    print("export CHAIN_NODES='" + json.dumps(nodes) + "'")
    print("export CHAIN_POLL_SECONDS=3 EVM_SWEEP_SECONDS=10")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8545", help="the node's JSON-RPC address")
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("setup")
    pay = actions.add_parser("pay")
    pay.add_argument("address")
    pay.add_argument("amount", type=Decimal)
    pay.add_argument("--token", help="the token contract (default: ETH)")
    mine = actions.add_parser("mine")
    mine.add_argument("blocks", type=int, nargs="?", default=1)
    balance = actions.add_parser("balance")
    balance.add_argument("address")
    balance.add_argument("--token")
    args = parser.parse_args()
    w3 = _w3(args.url)
    if args.action == "setup":
        setup(w3, args.url)
    elif args.action == "pay":
        to, rich = Web3.to_checksum_address(args.address), w3.eth.accounts[0]
        if args.token:
            token = w3.eth.contract(address=Web3.to_checksum_address(args.token), abi=TOKEN_ABI)
            txid = token.functions.transfer(to, to_units(args.amount, 6)).transact({"from": rich})
        else:
            txid = w3.eth.send_transaction({"from": rich, "to": to, "value": Wei(to_units(args.amount, 18))})
        print(Web3.to_hex(txid))
    elif args.action == "mine":
        w3.provider.make_request("hardhat_mine", [hex(args.blocks)])  # type: ignore[arg-type]
        print(f"mined {args.blocks}; tip {w3.eth.block_number}")
    else:
        owner = Web3.to_checksum_address(args.address)
        if args.token:
            token = w3.eth.contract(address=Web3.to_checksum_address(args.token), abi=TOKEN_ABI)
            print(Decimal(token.functions.balanceOf(owner).call()).scaleb(-6))
        else:
            print(Decimal(w3.eth.get_balance(owner)).scaleb(-18).normalize())


if __name__ == "__main__":
    main()
