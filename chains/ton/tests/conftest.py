from __future__ import annotations

import pytest

from chains.ton.node import TonCenter
from tests.ton_devnet.fixtures import TonDevnet, ton_devnet

__all__ = ["ton_devnet", "toncenter"]


@pytest.fixture
def toncenter(ton_devnet: TonDevnet) -> TonCenter:
    """Kassa's client of the devnet's toncenter API."""
    return TonCenter(ton_devnet.api_url)
