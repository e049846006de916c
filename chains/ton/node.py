"""A client of toncenter's HTTP API v2 (ton-http-api): only the methods Kassa uses, over `requests`.

`url` is the API's base, e.g. https://toncenter.com/api/v2 (the devnet's: http://127.0.0.1:PORT/api/v2);
`api_key`, when given, is sent as `X-API-Key`. Reads are GET with query parameters; sendBocReturnHash,
estimateFee and runGetMethod are POST with a JSON body, as toncenter takes them.

Every answer is toncenter's envelope `{"ok": true, "result": ...}` or `{"ok": false, "error", "code"}`, and
every result is checked for its shape before it is used. Errors are told apart the way a caller acts on them:
- `TonNodeUnavailable` (a ChainUnavailable): toncenter could not be reached, timed out, rate limited
  (HTTP 429), answered something that is not its JSON, or answered an error of its own or of its liteservers
  (HTTP 5xx) for a read. Nothing is known to have happened: try again later.
- `TonNodeError`: toncenter answered and refused the request (`code`: its HTTP code, `error`: its text): a
  bad address (416), bad parameters (422), a wrong API key (401)...
- `ExternalMessageRejected` (a TonNodeError): sendBocReturnHash's message was refused by the liteserver:
  the wallet did not accept it (a replayed seqno, an expired valid_until, a bad signature). It was not sent.
  Any other error of sendBocReturnHash is TonNodeUnavailable: it may or may not have been sent.
- `NodeAnswerError` (a ChainUnavailable too): toncenter answered in a shape it does not write, or a
  transaction whose JSON and bytes disagree. The caller waits and logs it, as for an outage.

Transactions are read from their bytes (`data`, parsed by chains.ton.messages) as well as from the JSON; the
two must agree on the lt, the hash, and the inbound message's value, source and destination.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import requests
from pytoniq_core import Address

from chains.answers import limited_session
from chains.base import ChainUnavailable
from chains.ton.messages import raw_address
from chains.ton.results import (
    AddressInformation,
    Fees,
    MasterchainInfo,
    NodeAnswerError,
    RunResult,
    SentMessage,
    Transaction,
    WalletInformation,
    amount_of,
    b64,
    block_id_of,
    hash32,
    object_of,
    parse_transaction_json,
    stack_entry,
    state_of,
    transaction_id_of,
    whole,
)

CONNECT_TIMEOUT_SECONDS = 3
READ_TIMEOUT_SECONDS = 15
API_KEY_HEADER = "X-API-Key"
MAX_TRANSACTIONS_PAGE = 100
# The text of a liteserver refusing an external message (tonlib's "cannot apply external message").
_REJECTED_MARKS = ("External message was not accepted", "cannot apply external message")


class TonNodeUnavailable(ChainUnavailable):
    """toncenter could not be asked, or did not answer: try again later."""


class TonNodeError(Exception):
    """toncenter answered the call with a refusal."""

    def __init__(self, method: str, code: int, error: str) -> None:
        super().__init__(f"{method}: {code}: {error}")
        self.method = method
        self.code = code
        self.error = error


class ExternalMessageRejected(TonNodeError):
    """The external message was refused (the wallet did not accept it): it was not sent."""


# --- the client --------------------------------------------------------------------------------------------


class TonCenter:
    """toncenter's API v2 at `url` (its base, ending in /api/v2)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = READ_TIMEOUT_SECONDS,
        session: requests.Session | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("toncenter's url is http(s)://host/api/v2")
        self.url = url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if api_key:
            self._headers[API_KEY_HEADER] = api_key
        self._timeout = (CONNECT_TIMEOUT_SECONDS, timeout)
        self._session = session or limited_session()  # answers capped in size and depth (chains.answers)

    # --- transport -----------------------------------------------------------------------------------

    def _call(self, method: str, *, query: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        """The `result` of `method`: GET with `query`, or POST with the JSON `body`."""
        where = f"{self.url}/{method}"
        try:
            if body is None:
                response = self._session.get(
                    where, params=query, headers=self._headers, timeout=self._timeout
                )
            else:
                response = self._session.post(
                    where,
                    data=json.dumps(body).encode(),
                    headers={**self._headers, "Content-Type": "application/json"},
                    timeout=self._timeout,
                )
        except requests.RequestException as exc:
            raise TonNodeUnavailable(f"{self.url}: {method}: {type(exc).__name__}") from exc
        if response.status_code == 429:
            raise TonNodeUnavailable(f"{self.url}: {method}: rate limited (HTTP 429)")
        try:
            answer = json.loads(response.content, parse_float=Decimal)
        except ValueError:
            raise TonNodeUnavailable(f"{self.url}: {method}: HTTP {response.status_code}, not JSON") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
            if response.status_code >= 500:
                raise TonNodeUnavailable(f"{self.url}: {method}: HTTP {response.status_code}")
            raise NodeAnswerError(f"{method}: not toncenter's envelope (HTTP {response.status_code})")
        if answer["ok"] is True:
            if response.status_code != 200 or "result" not in answer:
                raise NodeAnswerError(f"{method}: ok without a result (HTTP {response.status_code})")
            return answer["result"]
        error = answer.get("error")
        code = answer.get("code", response.status_code)
        if not isinstance(error, str) or isinstance(code, bool) or not isinstance(code, int):
            raise NodeAnswerError(f"{method}: a refusal without error and code")
        if method in ("sendBoc", "sendBocReturnHash") and any(mark in error for mark in _REJECTED_MARKS):
            raise ExternalMessageRejected(method, code, error)
        if code >= 500 or response.status_code >= 500:
            raise TonNodeUnavailable(f"{self.url}: {method}: {code}: {error[:200]}")
        raise TonNodeError(method, code, error)

    def _parsed(self, method: str, parse: Any, *args: Any) -> Any:
        try:
            return parse(*args)
        except NodeAnswerError as exc:
            raise NodeAnswerError(f"{method}: {exc}") from None
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise NodeAnswerError(f"{method}: not toncenter's shape ({type(exc).__name__}: {exc})") from None

    # --- reading the chain ---------------------------------------------------------------------------

    def masterchain_info(self) -> MasterchainInfo:
        def parse(result: Any) -> MasterchainInfo:
            data = object_of(result, "result")
            return MasterchainInfo(
                last=block_id_of(data.get("last"), "last"),
                init=block_id_of(data.get("init"), "init"),
                state_root_hash=hash32(data.get("state_root_hash"), "state_root_hash"),
            )

        return self._parsed("getMasterchainInfo", parse, self._call("getMasterchainInfo"))  # type: ignore[no-any-return]

    def address_information(self, address: str) -> AddressInformation:
        def parse(result: Any) -> AddressInformation:
            data = object_of(result, "result")
            return AddressInformation(
                balance=amount_of(data.get("balance"), "balance"),
                state=state_of(data.get("state"), "state"),
                code=b64(data.get("code"), "code"),
                data=b64(data.get("data"), "data"),
                last_transaction=transaction_id_of(data.get("last_transaction_id"), "last_transaction_id"),
                block=block_id_of(data.get("block_id"), "block_id"),
                sync_utime=whole(data.get("sync_utime"), "sync_utime"),
            )

        result = self._call("getAddressInformation", query={"address": address})
        return self._parsed("getAddressInformation", parse, result)  # type: ignore[no-any-return]

    def wallet_information(self, address: str) -> WalletInformation:
        def parse(result: Any) -> WalletInformation:
            data = object_of(result, "result")
            wallet = data.get("wallet")
            if not isinstance(wallet, bool):
                raise NodeAnswerError("wallet: not a boolean")
            wallet_type = data.get("wallet_type")
            if wallet_type is not None and not isinstance(wallet_type, str):
                raise NodeAnswerError("wallet_type: not text")
            seqno = whole(data["seqno"], "seqno") if data.get("seqno") is not None else None
            wallet_id = whole(data["wallet_id"], "wallet_id") if data.get("wallet_id") is not None else None
            if wallet and seqno is None:
                raise NodeAnswerError("a wallet without a seqno")
            return WalletInformation(
                wallet=wallet,
                balance=amount_of(data.get("balance"), "balance"),
                state=state_of(data.get("account_state"), "account_state"),
                last_transaction=transaction_id_of(data.get("last_transaction_id"), "last_transaction_id"),
                wallet_type=wallet_type,
                seqno=seqno,
                wallet_id=wallet_id,
            )

        result = self._call("getWalletInformation", query={"address": address})
        return self._parsed("getWalletInformation", parse, result)  # type: ignore[no-any-return]

    def transactions(
        self,
        address: str,
        *,
        limit: int = 10,
        lt: int | None = None,
        hash: bytes | None = None,
        to_lt: int = 0,
        archival: bool = False,
    ) -> list[Transaction]:
        """Up to `limit` transactions of `address`, newest first: from its last one, or from (`lt`, `hash`)
        included, down to (not including) `to_lt`."""
        if not 1 <= limit <= MAX_TRANSACTIONS_PAGE:
            raise ValueError(f"limit is 1 .. {MAX_TRANSACTIONS_PAGE}")
        if (lt is None) != (hash is None):
            raise ValueError("lt and hash go together")
        query: dict[str, Any] = {"address": address, "limit": limit, "to_lt": to_lt}
        if lt is not None and hash is not None:
            query["lt"] = lt
            query["hash"] = hash.hex()
        if archival:
            query["archival"] = "true"
        result = self._call("getTransactions", query=query)

        def parse(items: Any) -> list[Transaction]:
            if not isinstance(items, list):
                raise NodeAnswerError("not a list")
            if len(items) > limit:
                raise NodeAnswerError(f"{len(items)} transactions for a limit of {limit}")
            found = [parse_transaction_json(item, f"[{i}]") for i, item in enumerate(items)]
            wanted = raw_address(Address(address))
            for i, transaction in enumerate(found):
                if transaction.account != wanted:
                    raise NodeAnswerError(f"[{i}]: a transaction of another account")
                if transaction.id.lt <= to_lt:
                    raise NodeAnswerError(f"[{i}]: at or below to_lt")
                if i and transaction.id.lt >= found[i - 1].id.lt:
                    raise NodeAnswerError(f"[{i}]: not newest first")
                if i and found[i - 1].parsed.prev_lt != transaction.id.lt:
                    raise NodeAnswerError(f"[{i}]: a gap in the account's chain of transactions")
            if found and lt is not None and (found[0].id.lt, found[0].id.hash) != (lt, hash):
                raise NodeAnswerError("the first transaction is not the one asked for")
            return found

        return self._parsed("getTransactions", parse, result)  # type: ignore[no-any-return]

    def run_get_method(
        self, address: str, method: str | int, stack: Sequence[tuple[str, Any]] = ()
    ) -> RunResult:
        """Run a get method; stack entries as toncenter takes them, e.g. ("num", 5)."""
        body = {"address": address, "method": method, "stack": [[kind, value] for kind, value in stack]}

        def parse(result: Any) -> RunResult:
            data = object_of(result, "result")
            entries = data.get("stack")
            if not isinstance(entries, list):
                raise NodeAnswerError("stack: not a list")
            return RunResult(
                exit_code=whole(data.get("exit_code"), "exit_code"),
                gas_used=whole(data.get("gas_used"), "gas_used"),
                stack=tuple(stack_entry(entry, f"stack[{i}]") for i, entry in enumerate(entries)),
            )

        return self._parsed("runGetMethod", parse, self._call("runGetMethod", body=body))  # type: ignore[no-any-return]

    def seqno(self, address: str) -> int:
        """A wallet's seqno (its get method); 0 for an account with no code yet (it will be deployed by its
        first message)."""
        result = self.run_get_method(address, "seqno")
        if result.exit_code == -13 or (result.exit_code != 0 and not result.stack):
            info = self.address_information(address)
            if info.state == "uninitialized":
                return 0
            raise NodeAnswerError(f"runGetMethod seqno: exit code {result.exit_code}")
        if result.exit_code != 0:
            raise NodeAnswerError(f"runGetMethod seqno: exit code {result.exit_code}")
        return result.number(0)

    # --- sending -------------------------------------------------------------------------------------

    def send_boc(self, boc: bytes) -> SentMessage:
        """Send an external message (sendBocReturnHash): its hash and normalized hash, or
        ExternalMessageRejected when the liteserver refused it."""
        result = self._call("sendBocReturnHash", body={"boc": base64.b64encode(boc).decode()})

        def parse(answer: Any) -> SentMessage:
            data = object_of(answer, "result")
            norm = data.get("hash_norm")
            return SentMessage(
                hash=hash32(data.get("hash"), "hash"),
                hash_norm=hash32(norm, "hash_norm") if norm is not None else None,
            )

        return self._parsed("sendBocReturnHash", parse, result)  # type: ignore[no-any-return]

    def estimate_fee(
        self,
        address: str,
        body: bytes,
        *,
        init_code: bytes = b"",
        init_data: bytes = b"",
        ignore_chksig: bool = True,
    ) -> Fees:
        """The fees of an external message of `body` (a BOC) to `address` (source fees only)."""
        request = {
            "address": address,
            "body": base64.b64encode(body).decode(),
            "init_code": base64.b64encode(init_code).decode(),
            "init_data": base64.b64encode(init_data).decode(),
            "ignore_chksig": ignore_chksig,
        }

        def parse(answer: Any) -> Fees:
            data = object_of(object_of(answer, "result").get("source_fees"), "source_fees")
            return Fees(
                in_fwd_fee=amount_of(data.get("in_fwd_fee"), "in_fwd_fee"),
                storage_fee=amount_of(data.get("storage_fee"), "storage_fee"),
                gas_fee=amount_of(data.get("gas_fee"), "gas_fee"),
                fwd_fee=amount_of(data.get("fwd_fee"), "fwd_fee"),
            )

        return self._parsed("estimateFee", parse, self._call("estimateFee", body=request))  # type: ignore[no-any-return]
