"""`python -m tests.tron_devnet --port 8090`: serve a fresh devnet until interrupted, after printing the
accounts, keys and token it made (`make tron-devnet`)."""

from __future__ import annotations

import argparse
import json

from tests.tron_devnet import api
from tests.tron_devnet.server import start


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.tron_devnet", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    options = parser.parse_args()
    running = start(options.host, options.port, verbose=options.verbose)
    facts = api.info(running.devnet, {}, True)
    print(f"Kassa TRON devnet (test only, not java-tron) on {running.url}")
    print(json.dumps(facts, indent=2))
    print("controls: POST /devnet/mine {blocks, skip_seconds}, /devnet/fork {depth},")
    print("          /devnet/fund {address, sun, token}, /devnet/stake {address, sun, resource},")
    print("          /devnet/blacklist {address, blacklisted}; GET /devnet/info")
    try:
        running.thread.join()
    except KeyboardInterrupt:
        running.stop()


if __name__ == "__main__":
    main()
