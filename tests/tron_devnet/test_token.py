"""The committed TRC-20 fixture (contracts/tether_token.json) is what contracts/compile.js makes of the
committed TetherToken.sol, with hardhat's pinned solc-js (`make hardhat`)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

CONTRACTS = Path(__file__).resolve().parent / "contracts"


def test_the_fixture_was_compiled_from_the_committed_source() -> None:
    fixture = json.loads((CONTRACTS / "tether_token.json").read_text())

    assert (
        fixture["source_sha256"] == hashlib.sha256((CONTRACTS / "TetherToken.sol").read_bytes()).hexdigest()
    )


@pytest.mark.hardhat
def test_a_fresh_compile_gives_the_committed_bytecode() -> None:
    node = shutil.which("node")
    assert node is not None

    fresh = subprocess.run(
        [node, str(CONTRACTS / "compile.js"), "--print"], capture_output=True, check=True, timeout=120
    )

    assert json.loads(fresh.stdout) == json.loads((CONTRACTS / "tether_token.json").read_text())
