"""A real hardhat@2 node for the EVM smoke tests: hardhat's in-memory chain (id 31337, a block per
transaction) on a free port of 127.0.0.1.

tests/hardhat pins hardhat (package.json and package-lock.json); `npm ci --prefix tests/hardhat` installs it
(`.ci/run` and `make hardhat` do). On a machine without it the tests that need a node skip with the reason
(and CI, which allows no skip, fails). The node is started in its own process group and the whole group is
stopped on exit (SIGTERM, then SIGKILL after 10 s): `bin/hardhat` may be a wrapper around the node process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests
import web3

from tests.nodes import free_port
from tests.workers import ROOT, wait_for

HARDHAT_DIR = ROOT / "tests" / "hardhat"
HARDHAT = HARDHAT_DIR / "node_modules" / ".bin" / "hardhat"
CHAIN_ID = 31337


def hardhat_available() -> bool:
    """hardhat is installed in tests/hardhat (`npm ci --prefix tests/hardhat`)."""
    return os.access(HARDHAT, os.X_OK)


@dataclass(frozen=True)
class HardhatNode:
    url: str  # http://127.0.0.1:port
    pid: int  # the launched process, leader of the node's process group
    w3: web3.Web3

    @property
    def rich(self) -> str:
        """The first of hardhat's 20 unlocked accounts (10,000 ETH each): `send_transaction` from it."""
        return str(self.w3.eth.accounts[0])


@contextmanager
def hardhat_node() -> Iterator[HardhatNode]:
    """A fresh hardhat node (empty chain); its process group stopped on exit, and its port closed."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="kassa-hardhat-") as logdir:
        log_path = Path(logdir) / "hardhat.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [str(HARDHAT), "node", "--hostname", "127.0.0.1", "--port", str(port)],
                cwd=HARDHAT_DIR,
                env={**os.environ, "HARDHAT_DISABLE_TELEMETRY_PROMPT": "true", "NO_COLOR": "1"},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            if not wait_for(lambda: _answers(url, process), timeout=60):
                tail = log_path.read_bytes()[-2000:].decode(errors="replace")
                raise RuntimeError(f"hardhat did not answer eth_chainId on {url} within 60 s:\n{tail}")
            w3 = web3.Web3(web3.Web3.HTTPProvider(url, request_kwargs={"timeout": 30}))
            yield HardhatNode(url=url, pid=process.pid, w3=w3)
        finally:
            _stop(process)
            if _port_open(port):
                raise RuntimeError(f"hardhat (process group {process.pid}) still listens on {url}")


def _answers(url: str, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"hardhat exited with {process.returncode} before answering on {url}")
    try:
        answer = requests.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}, timeout=2
        )
        return "result" in answer.json()
    except (requests.RequestException, ValueError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the node's process group, SIGKILL after 10 s; returns once no process of it is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and group_alive(process.pid):
        process.poll()  # reaps the leader once it exits
        time.sleep(0.1)
    if group_alive(process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    if not wait_for(lambda: not group_alive(process.pid), timeout=10):
        raise RuntimeError(f"hardhat's process group {process.pid} survived SIGKILL")


def group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in process group `pgid` (Linux /proc)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its closing parenthesis.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0
