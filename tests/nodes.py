"""Real chain nodes for tests: Debian's litecoind on regtest, in its own datadir on free ports.

The daemon is run directly (`/usr/lib/litecoin/litecoind`, not the wrapper that writes ~/.litecoin) and
stopped by its PID. `.ci/run` installs the package; on a machine without it the tests that need a node
skip with the reason (and CI, which allows no skip, fails).
"""

from __future__ import annotations

import contextlib
import gc
import os
import secrets
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from chains.bitcoincore.rpc import NodeUnavailable, RpcClient, RpcError
from tests.workers import wait_for

LITECOIND = Path("/usr/lib/litecoin/litecoind")
STOP_GRACE_SECONDS = 5  # a node no client holds a connection to exits within a second of `stop`


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Node:
    url: str  # http://user:password@127.0.0.1:port
    rpc: RpcClient
    datadir: Path
    pid: int


@contextmanager
def litecoind_regtest(*extra: str) -> Iterator[Node]:
    """A fresh regtest litecoind (with `extra` options); stopped (then killed if it lingers) and its
    datadir removed on exit."""
    with tempfile.TemporaryDirectory(prefix="kassa-ltc-") as datadir:
        user, password = "kassa", secrets.token_hex(16)
        port = free_port()
        process = subprocess.Popen(
            [
                str(LITECOIND),
                "-regtest",
                f"-datadir={datadir}",
                "-server=1",
                "-listen=0",
                f"-port={free_port()}",
                f"-rpcport={port}",
                "-rpcbind=127.0.0.1",
                "-rpcallowip=127.0.0.1",
                f"-rpcuser={user}",
                f"-rpcpassword={password}",
                "-fallbackfee=0.0001",
                "-txindex=1",
                "-printtoconsole=0",
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        url = f"http://{user}:{password}@127.0.0.1:{port}"
        rpc = RpcClient(url)
        try:
            if not wait_for(lambda: _answers(rpc), timeout=60):
                raise RuntimeError("litecoind did not answer on its RPC port within 60 s")
            yield Node(url=url, rpc=rpc, datadir=Path(datadir), pid=process.pid)
        finally:
            _stop(rpc, process)


def _answers(rpc: RpcClient) -> bool:
    try:
        rpc.call("getblockchaininfo")
    except NodeUnavailable:
        return False
    except RpcError:  # -28: still loading
        return False
    return True


def _stop(rpc: RpcClient, process: subprocess.Popen[bytes]) -> None:
    # A node exits only once no client holds a kept-alive connection to it, or after they idle out
    # (-rpcservertimeout, 30 s). The clients the tests made and dropped still hold theirs until the cyclic
    # collector frees them, which is rare once a module has imported config.wsgi (core.runtime.settle_gc):
    # collected now, they close. A client still in use is cut by the kill after a short grace.
    gc.collect()
    with contextlib.suppress(NodeUnavailable, RpcError):  # already gone, or not up yet
        rpc.call("stop")
    try:
        process.wait(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


# --- paying and mining on a real node (the node-side counterpart of tests/chain.py) -------------------------


class Miner:
    """A wallet with private keys on the node that mines, pays and double-spends for the tests."""

    def __init__(self, node: Node, name: str = "miner") -> None:
        self.node = node
        with contextlib.suppress(RpcError):  # already there from an earlier test of the session
            node.rpc.call("createwallet", name, False, False, "", False, False)
        self.wallet = node.rpc.wallet(name)
        if node.rpc.call("getblockcount") < 101:
            self.mine(101)  # coinbase outputs mature after 100 blocks

    def address(self) -> str:
        return str(self.wallet.call("getnewaddress"))

    def mine(self, count: int = 1) -> list[str]:
        """`count` blocks to a fresh address (a block to the same address after invalidateblock would be
        the identical, rejected block)."""
        blocks = list(self.node.rpc.call("generatetoaddress", count, self.address()))
        self.settle()
        return blocks

    def pay(self, address: str, amount: str) -> str:
        """Send `amount` to `address` (into the mempool); returns the txid."""
        txid = str(self.wallet.call("sendtoaddress", address, Decimal(amount)))
        self.settle()
        return txid

    def settle(self) -> None:
        """Wait until every wallet of the node has heard of the new transactions and blocks: the node tells
        its other wallets (Kassa's deposit wallet) asynchronously, so a scan right after could miss them."""
        self.node.rpc.call("syncwithvalidationinterfacequeue")

    def double_spend(self, txid: str) -> str:
        """Mine, on top of the current tip, a block whose transaction spends the first input of `txid` back
        to this wallet: `txid` can then never confirm. Returns the conflicting txid."""
        raw = self.node.rpc.call("getrawtransaction", txid, True)
        spent = raw["vin"][0]
        previous = self.node.rpc.call("getrawtransaction", spent["txid"], True)
        value = previous["vout"][spent["vout"]]["value"]
        unsigned = self.node.rpc.call(
            "createrawtransaction",
            [{"txid": spent["txid"], "vout": spent["vout"]}],
            [{self.address(): value - Decimal("0.001")}],
        )
        signed = self.wallet.call("signrawtransactionwithwallet", unsigned)["hex"]
        conflict = self.node.rpc.call("decoderawtransaction", signed)["txid"]
        self.node.rpc.call("generateblock", self.address(), [signed])
        self.settle()
        return str(conflict)
