from __future__ import annotations

import pytest

from chains.solana.tests.fake_node import FakeRpc
from tests.solana_devnet.fixtures import solana_devnet

__all__ = ["solana_devnet"]


@pytest.fixture
def rpc() -> FakeRpc:
    return FakeRpc()
