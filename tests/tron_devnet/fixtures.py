"""The pytest fixture: `tron_devnet` starts a fresh devnet (its own genesis) on a free port in a thread and
yields a `DevnetClient` speaking to it over HTTP only. Outside this package, import the fixture into a
conftest: `from tests.tron_devnet.fixtures import tron_devnet  # noqa: F401`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.tron_devnet.encoding import address_bytes, make_raw, raw_decode, raw_encode, raw_to_json, txid
from tests.tron_devnet.keys import Key
from tests.tron_devnet.server import start


class DevnetClient:
    """The devnet's URL, the keys of its genesis accounts (`faucet`, `alice`, `bob`, `carol`), its token, and
    its endpoints and controls as methods that answer the JSON."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.info = self.get("devnet/info")
        self.faucet = Key(bytes.fromhex(self.info["faucet"]["private_key"]))
        self.accounts = {n: Key(bytes.fromhex(a["private_key"])) for n, a in self.info["accounts"].items()}
        self.token = self.info["token"]["address"]

    def post(self, path: str, body: dict[str, Any] | None = None, *, status: int = 200) -> Any:
        response = self.http.post(f"{self.url}/{path}", json=body or {}, timeout=30)
        assert response.status_code == status, response.text
        return response.json()

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        response = self.http.get(f"{self.url}/{path}", params=params, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    # --- controls -------------------------------------------------------------------------------------

    def mine(self, blocks: int = 1, *, skip_seconds: int = 0) -> dict[str, Any]:
        return self.post("devnet/mine", {"blocks": blocks, "skip_seconds": skip_seconds})  # type: ignore[no-any-return]

    def fork(self, depth: int) -> dict[str, Any]:
        return self.post("devnet/fork", {"depth": depth})  # type: ignore[no-any-return]

    def fund(self, address: str, *, sun: int = 0, token: int = 0) -> list[str]:
        return self.post("devnet/fund", {"address": address, "sun": sun, "token": token})["txids"]  # type: ignore[no-any-return]

    def stake(self, address: str, sun: int, resource: str = "ENERGY") -> None:
        self.post("devnet/stake", {"address": address, "sun": sun, "resource": resource})

    def blacklist(self, address: str, *, blacklisted: bool = True) -> str:
        return self.post("devnet/blacklist", {"address": address, "blacklisted": blacklisted})["txid"]  # type: ignore[no-any-return]

    # --- shortcuts over the wallet API ----------------------------------------------------------------

    def send(self, transaction: dict[str, Any]) -> dict[str, Any]:
        return self.post("wallet/broadcasttransaction", transaction)  # type: ignore[no-any-return]

    def transfer(self, key: Key, to: str, sun: int, **extra: Any) -> dict[str, Any]:
        """An unsigned TRX transfer built by the node (createtransaction)."""
        body = {"owner_address": key.address, "to_address": to, "amount": sun, "visible": True, **extra}
        return self.post("wallet/createtransaction", body)  # type: ignore[no-any-return]

    def token_transfer(
        self, key: Key, to: str, units: int, *, fee_limit: int = 100_000_000
    ) -> dict[str, Any]:
        """An unsigned TRC-20 transfer(to, units) built by the node (triggersmartcontract)."""
        parameter = Key.abi_address(to) + units.to_bytes(32, "big").hex()
        body = {
            "owner_address": key.address,
            "contract_address": self.token,
            "function_selector": "transfer(address,uint256)",
            "parameter": parameter,
            "fee_limit": fee_limit,
            "visible": True,
        }
        answer = self.post("wallet/triggersmartcontract", body)
        assert answer["result"] == {"result": True}, answer
        return answer["transaction"]  # type: ignore[no-any-return]

    def build_locally(
        self,
        kind: str,
        value: dict[str, Any],
        *,
        ref: dict[str, Any] | None = None,
        expiration: int | None = None,
        fee_limit: int = 0,
        memo: bytes = b"",
    ) -> dict[str, Any]:
        """An unsigned transaction built on the client's side, as TronWeb's offline builder does: TAPOS from
        `ref` (a block as getblockbynum answers it; default the head), expiration = its time + 60 s.
        Address values are T-addresses or hex."""
        block = ref or self.post("wallet/getnowblock")
        number = block["block_header"]["raw_data"].get("number", 0)
        block_id = bytes.fromhex(block["blockID"])
        time = block["block_header"]["raw_data"]["timestamp"]
        value = {k: address_bytes(v) if k.endswith("_address") else v for k, v in value.items()}
        raw = make_raw(
            kind,
            value,
            ref_block_bytes=number.to_bytes(8, "big")[6:8],
            ref_block_hash=block_id[8:16],
            expiration=time + 60_000 if expiration is None else expiration,
            data=memo,
            timestamp=time,
            fee_limit=fee_limit,
        )
        raw_bytes = raw_encode(raw)
        return {
            "visible": False,
            "txID": txid(raw_bytes),
            "raw_data": raw_to_json(raw_decode(raw_bytes), visible=False),
            "raw_data_hex": raw_bytes.hex(),
        }

    def info_by_id(self, txid: str, *, solidity: bool = False) -> dict[str, Any]:
        prefix = "walletsolidity" if solidity else "wallet"
        return self.post(f"{prefix}/gettransactioninfobyid", {"value": txid})  # type: ignore[no-any-return]

    def balance(self, address: str) -> int:
        return int(self.post("wallet/getaccount", {"address": address, "visible": True}).get("balance", 0))

    def token_balance(self, address: str) -> int:
        body = {
            "owner_address": address,
            "contract_address": self.token,
            "function_selector": "balanceOf(address)",
            "parameter": Key.abi_address(address),
            "visible": True,
        }
        return int(self.post("wallet/triggerconstantcontract", body)["constant_result"][0], 16)


@pytest.fixture
def tron_devnet() -> Iterator[DevnetClient]:
    running = start()
    try:
        yield DevnetClient(running.url)
    finally:
        running.stop()
