"""`python -m tests.tron_devnet --port 8090`: serve a fresh devnet until interrupted, after printing the
accounts, keys and token it made (`make tron-devnet`). By hand, blocks come on their own as on TRON: one
every `--block-seconds` (3), the clock kept at the wall clock's (a signer checks expirations by its own);
`--block-seconds 0` mines only on request (POST /devnet/mine), as the tests do."""

from __future__ import annotations

import argparse
import json
import threading
import time

from tests.tron_devnet import api
from tests.tron_devnet.node import Devnet
from tests.tron_devnet.server import start


def produce(devnet: Devnet, seconds: float, stopped: threading.Event) -> None:
    """A block every `seconds`, its time the wall clock's (the missed slots skipped, never run back)."""
    while not stopped.wait(seconds):
        behind = int(time.time() * 1000) - devnet.head.timestamp - 3_000
        devnet.mine(1, skip_ms=max(behind, 0))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.tron_devnet", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument("--block-seconds", type=float, default=3.0, help="0: blocks only on request")
    options = parser.parse_args()
    running = start(options.host, options.port, verbose=options.verbose)
    stopped = threading.Event()
    if options.block_seconds > 0:
        running.devnet.mine(1, skip_ms=max(int(time.time() * 1000) - running.devnet.head.timestamp, 0))
        args = (running.devnet, options.block_seconds, stopped)
        threading.Thread(target=produce, args=args, daemon=True).start()
    facts = api.info(running.devnet, {}, True)
    print(f"Kassa TRON devnet (test only, not java-tron) on {running.url}")
    print(json.dumps(facts, indent=2))
    print("controls: POST /devnet/mine {blocks, skip_seconds}, /devnet/fork {depth},")
    print("          /devnet/fund {address, sun, token}, /devnet/stake {address, sun, resource},")
    print("          /devnet/blacklist {address, blacklisted}; GET /devnet/info")
    try:
        running.thread.join()
    except KeyboardInterrupt:
        stopped.set()
        running.stop()


if __name__ == "__main__":
    main()
