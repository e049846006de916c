"""The HTTP call the devnet scripts share (scripts/ton_devnet.py, scripts/solana_devnet.py): a GET, or a POST
of a JSON body, to one of the test devnets; anything but a JSON 200 ends the script with what went wrong."""

from __future__ import annotations

import sys
from typing import Any

import requests


def call(url: str, path: str, body: dict[str, Any] | None = None, *, chain: str, start: str) -> Any:
    """`path` of the devnet at `url`; `chain` and `start` (its make target) name it when nothing answers."""
    try:
        if body is None:
            response = requests.get(f"{url}/{path}", timeout=30)
        else:
            response = requests.post(f"{url}/{path}", json=body, timeout=30)
    except requests.RequestException as exc:
        sys.exit(f"no {chain} devnet answers at {url} ({exc}); start one first: make {start}")
    if response.status_code == 404 and path.startswith("devnet/"):
        sys.exit(f"{url} is not the test devnet (no /{path}): refused")
    if response.status_code != 200:
        sys.exit(f"{url}/{path}: {response.status_code} {response.text[:200]}")
    return response.json()
