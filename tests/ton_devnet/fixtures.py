"""The pytest fixture `ton_devnet`: a fresh TON devnet (tests/ton_devnet/server.js: toncenter's API v2 over
@ton/sandbox) in a Node process on a free loopback port, and a `TonDevnet` client of it over HTTP only.
The process stops after the tests of the module. Outside this package, import the fixture into a conftest:
`from tests.ton_devnet.fixtures import ton_devnet  # noqa: F401`.

tests/ton_devnet pins @ton/sandbox and its peers (package.json and package-lock.json);
`npm ci --prefix tests/ton_devnet` installs them (`.ci/run` and `make ton-devnet-npm` do). Without them, or
without node, the fixture skips with the reason (and CI, which allows no skip, fails)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.workers import ROOT

DEVNET_DIR = ROOT / "tests" / "ton_devnet"
SERVER = DEVNET_DIR / "server.js"
START_SECONDS = 60


def ton_devnet_available() -> str | None:
    """None when the devnet can start here, else why not."""
    if not shutil.which("node"):
        return "needs node on the PATH for the TON devnet"
    if not (DEVNET_DIR / "node_modules" / "@ton" / "sandbox" / "package.json").is_file():
        return "needs @ton/sandbox for the TON devnet: npm ci --prefix tests/ton_devnet"
    return None


class DevnetError(Exception):
    """The devnet answered a control with an error."""

    def __init__(self, status: int, answer: Any) -> None:
        super().__init__(f"HTTP {status}: {answer}")
        self.status = status
        self.answer = answer


class TonDevnet:
    """A running devnet: `url` (toncenter's API v2 is at `api_url`), the API as `api_get`/`api_post` (the
    toncenter envelope, undecoded), and the test controls as methods."""

    def __init__(self, url: str, *, api_key: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.api_url = f"{self.url}/api/v2"
        self.api_key = api_key
        self.http = requests.Session()
        self.faucet = self.control("info", method="GET")["faucet"]

    # --- toncenter's API, raw -------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"X-API-Key": self.api_key} if self.api_key else {}

    def api_get(self, method: str, **params: Any) -> requests.Response:
        return self.http.get(f"{self.api_url}/{method}", params=params, headers=self._headers(), timeout=30)

    def api_post(self, method: str, body: dict[str, Any]) -> requests.Response:
        return self.http.post(f"{self.api_url}/{method}", json=body, headers=self._headers(), timeout=30)

    def result(self, method: str, **params: Any) -> Any:
        """The `result` of a GET of `method`, which must have succeeded."""
        response = self.api_get(method, **params)
        answer = response.json()
        assert response.status_code == 200 and answer["ok"] is True, answer
        return answer["result"]

    # --- the controls ----------------------------------------------------------------------------------

    def control(self, name: str, body: dict[str, Any] | None = None, *, method: str = "POST") -> Any:
        response = self.http.request(method, f"{self.url}/devnet/{name}", json=body or {}, timeout=60)
        answer = response.json()
        if response.status_code != 200:
            raise DevnetError(response.status_code, answer)
        return answer

    def house_wallet(
        self,
        public_key: bytes | None = None,
        *,
        mnemonic: str | None = None,
        balance: int = 10_000_000_000,
        deploy: bool = True,
        wallet_id: int | None = None,
    ) -> dict[str, Any]:
        """A wallet v4R2 of `public_key` (or of a TON `mnemonic`), funded with `balance` nanotons by the
        faucet and deployed (or left uninitialized with that balance). Answers address, raw, public_key."""
        body: dict[str, Any] = {"balance": str(balance), "deploy": deploy}
        if public_key is not None:
            body["public_key"] = public_key.hex()
        if mnemonic is not None:
            body["mnemonic"] = mnemonic
        if wallet_id is not None:
            body["wallet_id"] = wallet_id
        return self.control("wallet", body)  # type: ignore[no-any-return]

    def customer(self, balance: int = 100_000_000_000) -> str:
        """A new customer's wallet v4R2 (key kept by the devnet), deployed with `balance`; its address."""
        return self.control("customer", {"balance": str(balance)})["address"]  # type: ignore[no-any-return]

    def pay(
        self,
        customer: str,
        to: str,
        amount: int,
        *,
        comment: str | None = None,
        bounce: bool | None = None,
        send_mode: int | None = None,
    ) -> dict[str, Any]:
        """`customer` pays `amount` nanotons to `to` with its wallet; `bounce` defaults to `to`'s own flag.
        Answers the masterchain `seqno` of the block and its `transactions` (address, lt, hash...)."""
        body: dict[str, Any] = {"from": customer, "to": to, "amount": str(amount)}
        if comment is not None:
            body["comment"] = comment
        if bounce is not None:
            body["bounce"] = bounce
        if send_mode is not None:
            body["send_mode"] = send_mode
        return self.control("pay", body)  # type: ignore[no-any-return]

    def fund(
        self, address: str, amount: int, *, bounce: bool = False, comment: str | None = None
    ) -> dict[str, Any]:
        """The faucet sends `amount` nanotons to `address` (non-bounceable unless `bounce`)."""
        body: dict[str, Any] = {"address": address, "amount": str(amount), "bounce": bounce}
        if comment is not None:
            body["comment"] = comment
        return self.control("fund", body)  # type: ignore[no-any-return]

    def advance(self, seconds: int) -> int:
        """Move the devnet's clock forward; its new unix time."""
        return self.control("time", {"advance": seconds})["now"]  # type: ignore[no-any-return]

    def now(self) -> int:
        return self.control("info", method="GET")["now"]  # type: ignore[no-any-return]

    def mine(self, blocks: int = 1) -> int:
        """`blocks` empty masterchain blocks; the new masterchain seqno."""
        return self.control("mine", {"blocks": blocks})["seqno"]  # type: ignore[no-any-return]

    def v4_transfer(self, **fields: Any) -> dict[str, Any]:
        """@ton/ton's own external message of a wallet v4R2 transfer (see server.js `v4_transfer`)."""
        return self.control("v4-transfer", fields)  # type: ignore[no-any-return]


class RunningDevnet:
    """The Node process of a devnet; `stop()` ends it (and only it)."""

    def __init__(self, *, api_key: str | None = None) -> None:
        command = [shutil.which("node") or "node", str(SERVER), "--port", "0"]
        if api_key:
            command += ["--api-key", api_key]
        self.process = subprocess.Popen(
            command,
            cwd=DEVNET_DIR,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = self._wait_for_url()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)

    def _wait_for_url(self) -> str:
        assert self.process.stdout is not None
        found: list[str] = []

        def read() -> None:
            assert self.process.stdout is not None
            line = self.process.stdout.readline()
            if line:
                found.append(json.loads(line)["url"])

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(START_SECONDS)
        if not found:
            self.stop()
            raise RuntimeError(f"the TON devnet did not start:\n{''.join(self.stderr)[-2000:]}")
        return found[0]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_devnet(*, api_key: str | None = None) -> RunningDevnet:
    reason = ton_devnet_available()
    if reason:
        pytest.skip(reason)
    return RunningDevnet(api_key=api_key)


@pytest.fixture(scope="module")
def ton_devnet() -> Iterator[TonDevnet]:
    running = start_devnet()
    try:
        yield TonDevnet(running.url)
    finally:
        running.stop()
