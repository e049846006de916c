"""The pytest fixtures: `near_devnet` starts a fresh NEAR devnet stub (its own genesis) on a free port in a
thread and yields a `NearDevnet` client speaking to it over HTTP only; `make_near_devnet(validity=...,
api_key=...)` starts one with options (every one it started is stopped after the test). Outside this
package, import them into a conftest: `from tests.near_devnet.fixtures import near_devnet  # noqa: F401`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from tests.near_devnet.server import API_KEY_HEADER, Running, start


class NearDevnet:
    """The stub's URL, JSON-RPC calls, and one method per control."""

    def __init__(self, url: str, *, api_key: str | None = None) -> None:
        self.url = url
        self.http = requests.Session()
        if api_key is not None:
            self.http.headers[API_KEY_HEADER] = api_key
        self._id = 0
        self.faucet: str = self.info()["faucet"]

    # --- HTTP -----------------------------------------------------------------------------------------

    def get(self, path: str) -> Any:
        response = self.http.get(f"{self.url}/{path}", timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def post(self, path: str, body: Any, *, status: int = 200) -> Any:
        response = self.http.post(f"{self.url}/{path}", json=body, timeout=30)
        assert response.status_code == status, response.text
        return response.json()

    def call(self, method: str, params: Any) -> dict[str, Any]:
        """The whole JSON-RPC answer to `method(params)`, whatever its HTTP status (200, 400, 408, 500)."""
        self._id += 1
        body = {"jsonrpc": "2.0", "id": str(self._id), "method": method, "params": params}
        response = self.http.post(f"{self.url}/", json=body, timeout=30)
        assert response.status_code in (200, 400, 408, 500), response.text
        answer: dict[str, Any] = response.json()
        assert answer["jsonrpc"] == "2.0" and answer["id"] == str(self._id), answer
        return answer

    def rpc(self, method: str, params: Any) -> Any:
        """The `result` of `method(params)`; the call must succeed."""
        answer = self.call(method, params)
        assert "error" not in answer, answer
        return answer["result"]

    def error(self, method: str, params: Any) -> dict[str, Any]:
        """The `error` of `method(params)`; the call must fail."""
        answer = self.call(method, params)
        assert "result" not in answer, answer
        return answer["error"]  # type: ignore[no-any-return]

    # --- controls -------------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        return self.get("devnet/info")  # type: ignore[no-any-return]

    def account(self, account_id: str, balance: int, *, public_key: str | None = None) -> dict[str, Any]:
        """public_key: 32 bytes in hex (an implicit account's is its id; a named one gets a devnet key)."""
        body: dict[str, Any] = {"account_id": account_id, "balance": str(balance)}
        if public_key is not None:
            body["public_key"] = public_key
        return self.post("devnet/account", body)  # type: ignore[no-any-return]

    def transfer(self, to: str, amount: int, *, sender: str | None = None) -> str:
        body: dict[str, Any] = {"to": to, "amount": str(amount)}
        if sender is not None:
            body["from"] = sender
        return self.post("devnet/transfer", body)["tx_hash"]  # type: ignore[no-any-return]

    def contract_transfer(self, to: str, amount: int, *, delay: int = 2) -> dict[str, str]:
        """{"tx_hash", "receipt_id"}: receipt_id is pay.devnet's transfer receipt."""
        body = {"to": to, "amount": str(amount), "delay": delay}
        return self.post("devnet/contract_transfer", body)  # type: ignore[no-any-return]

    def failing_transfer(self, to: str, amount: int) -> dict[str, str]:
        return self.post("devnet/failing_transfer", {"to": to, "amount": str(amount)})  # type: ignore[no-any-return]

    def system_refund(self, to: str, amount: int) -> str:
        return self.post("devnet/system_refund", {"to": to, "amount": str(amount)})["receipt_id"]  # type: ignore[no-any-return]

    def produce(self, blocks: int = 1) -> list[int]:
        """The heights of the blocks produced."""
        return self.post("devnet/produce", {"blocks": blocks})["heights"]  # type: ignore[no-any-return]

    def skip(self, heights: int = 1) -> int:
        """The height the next block will have."""
        return self.post("devnet/skip", {"heights": heights})["next_height"]  # type: ignore[no-any-return]

    def carry_over(self, shard_id: int) -> None:
        self.post("devnet/carry_over", {"shard_id": shard_id})

    def finalize(self) -> list[int]:
        return self.post("devnet/finalize", {})["heights"]  # type: ignore[no-any-return]

    def balance(self, account_id: str) -> int:
        """The account's balance after the head block (0 if it does not exist)."""
        return int(self.get(f"devnet/balance/{account_id}")["amount"])

    # --- shortcuts over the RPC -----------------------------------------------------------------------

    def block(self, finality: str = "optimistic", **reference: Any) -> dict[str, Any]:
        return self.rpc("block", reference or {"finality": finality})  # type: ignore[no-any-return]

    def chunk(self, block_id: int | str, shard_id: int) -> dict[str, Any]:
        return self.rpc("chunk", {"block_id": block_id, "shard_id": shard_id})  # type: ignore[no-any-return]

    def tx_status(self, tx_hash: str, sender: str, wait_until: str = "NONE") -> dict[str, Any]:
        params = {"tx_hash": tx_hash, "sender_account_id": sender, "wait_until": wait_until}
        return self.rpc("EXPERIMENTAL_tx_status", params)  # type: ignore[no-any-return]


MakeNearDevnet = Callable[..., NearDevnet]


@pytest.fixture
def make_near_devnet() -> Iterator[MakeNearDevnet]:
    started: list[tuple[Running, NearDevnet]] = []

    def make(*, validity: int | None = None, api_key: str | None = None) -> NearDevnet:
        running = start(validity=validity, api_key=api_key)
        client = NearDevnet(running.url, api_key=api_key)
        started.append((running, client))
        return client

    yield make
    for running, client in started:
        client.http.close()  # its kept-alive connections end their handler threads
        running.stop()


@pytest.fixture
def near_devnet(make_near_devnet: MakeNearDevnet) -> NearDevnet:
    return make_near_devnet()
