"""`python -m tests.solana_devnet --port 8899`: serve a fresh devnet until interrupted, after printing its
accounts and keys (`make solana-devnet`). By hand, slots come on their own as on Solana: one every
`--slot-ms` (400), the devnet's clock starting at the wall clock's; `--slot-ms 0` produces slots only on
request (POST /devnet/mine), as the tests do."""

from __future__ import annotations

import argparse
import json
import threading
import time

from tests.solana_devnet import controls
from tests.solana_devnet.node import Devnet
from tests.solana_devnet.server import API_KEY_HEADER, start


def produce(devnet: Devnet, seconds: float, stopped: threading.Event) -> None:
    while not stopped.wait(seconds):
        with devnet.lock:
            devnet.mine(1)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.solana_devnet", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8899)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument("--slot-ms", type=int, default=400, help="0: slots only on request")
    parser.add_argument("--api-key", help=f"require this key in the {API_KEY_HEADER} header")
    options = parser.parse_args()
    devnet = Devnet(genesis_time=int(time.time()))
    running = start(
        options.host, options.port, api_key=options.api_key, verbose=options.verbose, devnet=devnet
    )
    stopped = threading.Event()
    if options.slot_ms > 0:
        threading.Thread(target=produce, args=(devnet, options.slot_ms / 1000, stopped), daemon=True).start()
    with devnet.lock:
        facts = controls.info(devnet)
    print(f"Kassa Solana devnet (test only, LiteSVM, not a validator) on {running.url}")
    print(json.dumps(facts, indent=2))
    print(
        "JSON-RPC: POST / (getSlot, getBlockHeight, getLatestBlockhash, getBalance, getSignaturesForAddress,"
    )
    print("          getTransaction, getSignatureStatuses, sendTransaction, getFeeForMessage,")
    print("          getRecentPrioritizationFees)")
    print("controls: POST /devnet/mine {slots}, /devnet/airdrop {address, lamports},")
    print("          /devnet/pay {to, lamports, references, memo, memo_program, version}; GET /devnet/info")
    try:
        running.thread.join()
    except KeyboardInterrupt:
        stopped.set()
        running.stop()


if __name__ == "__main__":
    main()
