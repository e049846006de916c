"""The pytest fixture: `solana_devnet` starts a fresh devnet (its own genesis) on a free port in a thread and
yields a `DevnetClient` speaking to it over HTTP only. Outside this package, import the fixture into a
conftest: `from tests.solana_devnet.fixtures import solana_devnet  # noqa: F401`."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from solders.hash import Hash
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from tests.solana_devnet import wallet
from tests.solana_devnet.server import API_KEY_HEADER, start


class DevnetClient:
    """The devnet's URL, its faucet's and customer's keypairs, JSON-RPC calls, and its controls."""

    def __init__(self, url: str, *, api_key: str | None = None) -> None:
        self.url = url
        self.http = requests.Session()
        if api_key is not None:
            self.http.headers[API_KEY_HEADER] = api_key
        self._id = 0
        self.info = self.get("devnet/info")
        self.faucet = Keypair.from_base58_string(self.info["faucet"]["secret_key"])
        self.customer = Keypair.from_base58_string(self.info["customer"]["secret_key"])

    # --- HTTP -----------------------------------------------------------------------------------------

    def get(self, path: str) -> Any:
        response = self.http.get(f"{self.url}/{path}", timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def post(self, path: str, body: Any, *, status: int = 200) -> Any:
        response = self.http.post(f"{self.url}/{path}", json=body, timeout=30)
        assert response.status_code == status, response.text
        return response.json()

    def call(self, method: str, *params: Any) -> dict[str, Any]:
        """The whole JSON-RPC response to `method(*params)`."""
        self._id += 1
        body = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": list(params)}
        answer = self.post("", body)
        assert answer["jsonrpc"] == "2.0" and answer["id"] == self._id, answer
        return answer  # type: ignore[no-any-return]

    def rpc(self, method: str, *params: Any) -> Any:
        """The `result` of `method(*params)`; the call must succeed."""
        answer = self.call(method, *params)
        assert "error" not in answer, answer
        return answer["result"]

    def rpc_error(self, method: str, *params: Any) -> dict[str, Any]:
        """The `error` of `method(*params)`; the call must fail."""
        answer = self.call(method, *params)
        assert "result" not in answer, answer
        return answer["error"]  # type: ignore[no-any-return]

    # --- controls -------------------------------------------------------------------------------------

    def mine(self, slots: int = 1) -> dict[str, Any]:
        return self.post("devnet/mine", {"slots": slots})  # type: ignore[no-any-return]

    def airdrop(self, address: Pubkey | str, lamports: int) -> dict[str, Any]:
        return self.post("devnet/airdrop", {"address": str(address), "lamports": lamports})  # type: ignore[no-any-return]

    def pay(self, to: Pubkey | str, lamports: int, **fields: Any) -> dict[str, Any]:
        body = {"to": str(to), "lamports": lamports, **fields}
        if "references" in body:
            body["references"] = [str(reference) for reference in body["references"]]
        return self.post("devnet/pay", body)  # type: ignore[no-any-return]

    # --- shortcuts over the RPC -----------------------------------------------------------------------

    def blockhash(self, commitment: str = "confirmed") -> Hash:
        answer = self.rpc("getLatestBlockhash", {"commitment": commitment})
        return Hash.from_string(answer["value"]["blockhash"])

    def send(self, transaction: VersionedTransaction, **config: Any) -> str:
        """sendTransaction in base64 (preflight at `preflightCommitment`, confirmed unless given)."""
        encoded = base64.b64encode(bytes(transaction)).decode()
        options = {"encoding": "base64", "preflightCommitment": "confirmed", **config}
        return self.rpc("sendTransaction", encoded, options)  # type: ignore[no-any-return]

    def send_error(self, transaction: VersionedTransaction, **config: Any) -> dict[str, Any]:
        encoded = base64.b64encode(bytes(transaction)).decode()
        options = {"encoding": "base64", "preflightCommitment": "confirmed", **config}
        return self.rpc_error("sendTransaction", encoded, options)

    def payment(self, to: Pubkey, lamports: int, *, payer: Keypair | None = None, **options: Any) -> str:
        """A Solana Pay transfer built and signed here (wallet.payment) and sent; its signature."""
        blockhash = options.pop("blockhash", None) or self.blockhash()
        transaction = wallet.payment(payer or self.customer, to, lamports, blockhash, **options)
        return self.send(transaction)

    def transaction(self, signature: str, commitment: str = "confirmed") -> Any:
        config = {"encoding": "json", "maxSupportedTransactionVersion": 0, "commitment": commitment}
        return self.rpc("getTransaction", signature, config)

    def balance(self, address: Pubkey | str, commitment: str = "processed") -> int:
        return self.rpc("getBalance", str(address), {"commitment": commitment})["value"]  # type: ignore[no-any-return]

    def status(self, signature: str) -> Any:
        return self.rpc("getSignatureStatuses", [signature], {"searchTransactionHistory": True})["value"][0]


@pytest.fixture
def solana_devnet() -> Iterator[DevnetClient]:
    running = start()
    client = DevnetClient(running.url)
    try:
        yield client
    finally:
        client.http.close()  # its kept-alive connections end their handler threads
        running.stop()
