"""`python -m tests.near_devnet --port 3030`: serve a fresh NEAR devnet stub until interrupted (`make
near-devnet`). Blocks come only on request (POST /devnet/produce) unless `--block-time` is given, then one
every that many seconds, for trying a client by hand; the tests never use it."""

from __future__ import annotations

import argparse
import json
import threading

from tests.near_devnet import controls
from tests.near_devnet.chain import Chain
from tests.near_devnet.model import DEFAULT_VALIDITY
from tests.near_devnet.server import API_KEY_HEADER, start


def produce(chain: Chain, seconds: float, stopped: threading.Event) -> None:
    while not stopped.wait(seconds):
        with chain.lock:
            chain.produce(1)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.near_devnet", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3030)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument("--block-time", type=float, default=0.0, help="seconds a block; 0: only on request")
    parser.add_argument("--validity", type=int, default=DEFAULT_VALIDITY, help="transaction validity, blocks")
    parser.add_argument("--api-key", help=f"require this key in the {API_KEY_HEADER} header")
    options = parser.parse_args()
    chain = Chain(validity=options.validity)
    running = start(options.host, options.port, api_key=options.api_key, verbose=options.verbose, chain=chain)
    stopped = threading.Event()
    if options.block_time > 0:
        threading.Thread(target=produce, args=(chain, options.block_time, stopped), daemon=True).start()
    with chain.lock:
        print(json.dumps(controls.info(chain), indent=2))
    print(f"NEAR devnet stub on {running.url} (JSON-RPC at /, controls at /devnet/); Ctrl-C stops it")
    try:
        running.thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        stopped.set()
        running.stop()


if __name__ == "__main__":
    main()
