from __future__ import annotations

import pytest

from chains.tron.tests.fake_node import FakeHttp


@pytest.fixture
def http() -> FakeHttp:
    return FakeHttp()
