from __future__ import annotations

from tests.near_devnet.fixtures import make_near_devnet, near_devnet

__all__ = ["make_near_devnet", "near_devnet"]
