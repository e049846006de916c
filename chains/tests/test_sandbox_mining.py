"""Mining the sandbox chain from concurrent requests: each call gets its own blocks, none a 500."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from payments.models import SandboxBlock
from tests.workers import run_together

pytestmark = pytest.mark.django_db(transaction=True)

CALLS = 18


def _mine(token: str, body: dict) -> tuple[int, dict]:
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    response = client.post("/api/sandbox/blocks", body, format="json")
    return response.status_code, response.json() if response.status_code == 200 else response.content


@pytest.mark.parametrize("first_block", [False, True], ids=["above-a-tip", "first-blocks"])
def test_concurrent_mining_calls_each_add_their_blocks(merchant, first_block):
    if not first_block:
        SandboxBlock.objects.create(code="btc", height=1)
    start = SandboxBlock.objects.filter(code="btc").count()

    outcomes = run_together([lambda: _mine(merchant.public_token, {"count": 2, "asset": "btc"})] * CALLS)

    assert [status for status, _ in outcomes] == [200] * CALLS, outcomes
    heights = sorted(SandboxBlock.objects.filter(code="btc").values_list("height", flat=True))
    assert heights == list(range(1, start + 2 * CALLS + 1))
    # Each call reports the tip its own blocks made: every second height, once.
    assert sorted(body["tips"]["btc"] for _, body in outcomes) == list(
        range(start + 2, start + 2 * CALLS + 1, 2)
    )
