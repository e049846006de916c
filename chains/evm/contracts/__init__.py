"""ERC-20 ABIs: `ERC20_ABI`, the standard subset the backend uses against any real token, and the test
fixture token (Token.vy, compiled by scripts/compile_token.py into token.json): `TOKEN_ABI`,
`TOKEN_BYTECODE`, and `SOURCE_SHA256`, the hash of the source it was compiled from."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "Token.vy"
FIXTURE = HERE / "token.json"

# The part of ERC-20 the backend relies on for any token (USDT, USDC, ...): balances, transfers, decimals,
# and the Transfer event that deposits are read from.
ERC20_ABI: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "balanceOf",
        "stateMutability": "view",
        "inputs": [{"name": "owner", "type": "address"}],
        "outputs": [{"name": "", "type": "uint256"}],
    },
    {
        "type": "function",
        "name": "transfer",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    },
    {
        "type": "function",
        "name": "decimals",
        "stateMutability": "view",
        "inputs": [],
        "outputs": [{"name": "", "type": "uint8"}],
    },
    {
        "type": "event",
        "name": "Transfer",
        "anonymous": False,
        "inputs": [
            {"name": "from", "type": "address", "indexed": True},
            {"name": "to", "type": "address", "indexed": True},
            {"name": "value", "type": "uint256", "indexed": False},
        ],
    },
]

_FIXTURE: dict[str, Any] = json.loads(FIXTURE.read_text())

TOKEN_ABI: list[dict[str, Any]] = _FIXTURE["abi"]
TOKEN_BYTECODE: str = _FIXTURE["bytecode"]
SOURCE_SHA256: str = _FIXTURE["source_sha256"]


def source_matches() -> bool:
    """Whether token.json was compiled from the Token.vy beside it (else: run scripts/compile_token.py)."""
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest() == SOURCE_SHA256
