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
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import requests
from pytoniq_core import Address

from chains.answers import limited_session
from chains.base import ChainUnavailable
from chains.ton.messages import (
    MessageParseError,
    ParsedMessage,
    ParsedTransaction,
    parse_transaction,
    raw_address,
)
from chains.ton.units import parse_nanotons

CONNECT_TIMEOUT_SECONDS = 3
READ_TIMEOUT_SECONDS = 15
API_KEY_HEADER = "X-API-Key"
MAX_TRANSACTIONS_PAGE = 100
ACCOUNT_STATES = ("uninitialized", "active", "frozen")
# The text of a liteserver refusing an external message (tonlib's "cannot apply external message").
_REJECTED_MARKS = ("External message was not accepted", "cannot apply external message")


class TonNodeUnavailable(ChainUnavailable):
    """toncenter could not be asked, or did not answer: try again later."""


class NodeAnswerError(ChainUnavailable):
    """toncenter answered in a shape it does not write (or with bytes that contradict its JSON)."""


class TonNodeError(Exception):
    """toncenter answered the call with a refusal."""

    def __init__(self, method: str, code: int, error: str) -> None:
        super().__init__(f"{method}: {code}: {error}")
        self.method = method
        self.code = code
        self.error = error


class ExternalMessageRejected(TonNodeError):
    """The external message was refused (the wallet did not accept it): it was not sent."""


# --- results ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransactionId:
    lt: int
    hash: bytes  # 32 bytes

    @property
    def hash_b64(self) -> str:
        return base64.b64encode(self.hash).decode()


@dataclass(frozen=True)
class BlockId:
    workchain: int
    shard: int
    seqno: int
    root_hash: bytes
    file_hash: bytes


@dataclass(frozen=True)
class MasterchainInfo:
    last: BlockId
    init: BlockId
    state_root_hash: bytes


@dataclass(frozen=True)
class AddressInformation:
    balance: int  # nanotons
    state: str  # "uninitialized", "active" or "frozen"
    code: bytes  # BOC, b"" when none
    data: bytes
    last_transaction: TransactionId | None  # None: the account has no transaction
    block: BlockId
    sync_utime: int


@dataclass(frozen=True)
class WalletInformation:
    wallet: bool  # a known wallet contract
    balance: int
    state: str
    last_transaction: TransactionId | None
    wallet_type: str | None  # "wallet v4 r2"...
    seqno: int | None
    wallet_id: int | None


@dataclass(frozen=True)
class Message:
    """A message as toncenter reports it (its JSON), with the parsed bytes beside it."""

    hash: bytes
    source: str | None  # wc:hex; None for an external-in message
    destination: str | None  # wc:hex; None for an external-out message
    value: int
    fwd_fee: int
    created_lt: int
    body_hash: bytes
    text: str | None  # toncenter's decoded text comment (msg.dataText), if it gave one
    parsed: ParsedMessage | None  # from the transaction's bytes

    @property
    def comment(self) -> str | None:
        return self.parsed.comment if self.parsed is not None else self.text

    @property
    def bounced(self) -> bool:
        return bool(self.parsed and self.parsed.bounced)


@dataclass(frozen=True)
class Transaction:
    account: str  # wc:hex
    id: TransactionId
    utime: int
    fee: int
    storage_fee: int
    in_msg: Message | None
    out_msgs: tuple[Message, ...]
    data: bytes  # the transaction's BOC
    parsed: ParsedTransaction

    @property
    def aborted(self) -> bool:
        return self.parsed.aborted


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    gas_used: int
    stack: tuple[tuple[str, Any], ...]  # toncenter's legacy entries: ("num", int), ("cell", bytes)...

    def number(self, index: int = 0) -> int:
        kind, value = self.stack[index]
        if kind != "num" or not isinstance(value, int):
            raise NodeAnswerError(f"runGetMethod: stack[{index}] is {kind}, not a number")
        return value


@dataclass(frozen=True)
class SentMessage:
    hash: bytes
    hash_norm: bytes | None


@dataclass(frozen=True)
class Fees:
    in_fwd_fee: int
    storage_fee: int
    gas_fee: int
    fwd_fee: int

    @property
    def total(self) -> int:
        return self.in_fwd_fee + self.storage_fee + self.gas_fee + self.fwd_fee


# --- shape checks ------------------------------------------------------------------------------------------


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise NodeAnswerError(f"{what}: not an object")
    return value


def _int(value: Any, what: str) -> int:
    """A whole number, given as a JSON integer or a decimal string (toncenter writes lt and amounts so)."""
    if isinstance(value, bool):
        raise NodeAnswerError(f"{what}: not a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return parse_nanotons(value, what)
        except ValueError:
            pass
    raise NodeAnswerError(f"{what}: not a whole number ({value!r})")


def _amount(value: Any, what: str) -> int:
    amount = _int(value, what)
    if amount < 0:
        raise NodeAnswerError(f"{what}: negative")
    return amount


def _bytes(value: Any, what: str) -> bytes:
    """toncenter's Bytes: base64 ("" for none)."""
    if not isinstance(value, str):
        raise NodeAnswerError(f"{what}: not base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise NodeAnswerError(f"{what}: not base64") from None


def _hash(value: Any, what: str) -> bytes:
    raw = _bytes(value, what)
    if len(raw) != 32:
        raise NodeAnswerError(f"{what}: not a 32-byte hash")
    return raw


def _address(value: Any, what: str) -> str | None:
    """Any form of an address as wc:hex; "" is no address (None)."""
    if value == "":
        return None
    if not isinstance(value, str):
        raise NodeAnswerError(f"{what}: not an address")
    try:
        return raw_address(Address(value))
    except Exception:  # pytoniq raises several kinds on malformed addresses
        raise NodeAnswerError(f"{what}: not an address ({value!r})") from None


def _transaction_id(value: Any, what: str) -> TransactionId | None:
    data = _object(value, what)
    lt = _int(data.get("lt"), f"{what}.lt")
    digest = _hash(data.get("hash"), f"{what}.hash")
    if lt == 0 and digest == bytes(32):
        return None
    return TransactionId(lt, digest)


def _block_id(value: Any, what: str) -> BlockId:
    data = _object(value, what)
    return BlockId(
        workchain=_int(data.get("workchain"), f"{what}.workchain"),
        shard=_int(data.get("shard"), f"{what}.shard"),
        seqno=_int(data.get("seqno"), f"{what}.seqno"),
        root_hash=_hash(data.get("root_hash"), f"{what}.root_hash"),
        file_hash=_hash(data.get("file_hash"), f"{what}.file_hash"),
    )


def _state(value: Any, what: str) -> str:
    if value not in ACCOUNT_STATES:
        raise NodeAnswerError(f"{what}: not an account state ({value!r})")
    return str(value)


def _message(value: Any, what: str, parsed: ParsedMessage | None) -> Message:
    data = _object(value, what)
    msg_data = _object(data.get("msg_data"), f"{what}.msg_data")
    text: str | None = None
    if msg_data.get("@type") == "msg.dataText":
        try:
            text = _bytes(msg_data.get("text"), f"{what}.msg_data.text").decode("utf-8")
        except UnicodeDecodeError:
            text = None
    elif msg_data.get("@type") not in ("msg.dataRaw", "msg.dataEncryptedText", "msg.dataDecryptedText"):
        raise NodeAnswerError(f"{what}.msg_data: unknown @type {msg_data.get('@type')!r}")
    message = Message(
        hash=_hash(data.get("hash"), f"{what}.hash"),
        source=_address(data.get("source"), f"{what}.source"),
        destination=_address(data.get("destination"), f"{what}.destination"),
        value=_amount(data.get("value"), f"{what}.value"),
        fwd_fee=_amount(data.get("fwd_fee"), f"{what}.fwd_fee"),
        created_lt=_int(data.get("created_lt"), f"{what}.created_lt"),
        body_hash=_hash(data.get("body_hash"), f"{what}.body_hash"),
        text=text,
        parsed=parsed,
    )
    if parsed is not None:
        agree = (
            message.hash == parsed.hash
            and message.value == parsed.value
            and message.source == parsed.source
            and message.destination == parsed.destination
            and message.body_hash == parsed.body_hash
        )
        if not agree:
            raise NodeAnswerError(f"{what}: the JSON and the transaction's bytes disagree")
        if text is not None and parsed.comment is not None and text != parsed.comment:
            raise NodeAnswerError(f"{what}: the comment and the transaction's bytes disagree")
    return message


def parse_transaction_json(value: Any, what: str = "transaction") -> Transaction:
    """One transaction of getTransactions, checked against its own bytes."""
    data = _object(value, what)
    address = _object(data.get("address"), f"{what}.address")
    account = _address(address.get("account_address"), f"{what}.address.account_address")
    if account is None:
        raise NodeAnswerError(f"{what}: no account address")
    tx_id = _transaction_id(data.get("transaction_id"), f"{what}.transaction_id")
    if tx_id is None:
        raise NodeAnswerError(f"{what}: no transaction id")
    boc = _bytes(data.get("data"), f"{what}.data")
    try:
        parsed = parse_transaction(boc, int(account.split(":")[0]))
    except MessageParseError as exc:
        raise NodeAnswerError(f"{what}.data: {exc}") from None
    if (parsed.account, parsed.lt, parsed.hash) != (account, tx_id.lt, tx_id.hash):
        raise NodeAnswerError(f"{what}: the transaction's bytes are another transaction")
    utime = _int(data.get("utime"), f"{what}.utime")
    if utime != parsed.now:
        raise NodeAnswerError(f"{what}: utime and the transaction's bytes disagree")
    in_msg = data.get("in_msg")
    if (in_msg is None) != (parsed.in_msg is None):
        raise NodeAnswerError(f"{what}: in_msg and the transaction's bytes disagree")
    outs = data.get("out_msgs")
    if not isinstance(outs, list) or len(outs) != len(parsed.out_msgs):
        raise NodeAnswerError(f"{what}: out_msgs and the transaction's bytes disagree")
    return Transaction(
        account=account,
        id=tx_id,
        utime=utime,
        fee=_amount(data.get("fee"), f"{what}.fee"),
        storage_fee=_amount(data.get("storage_fee"), f"{what}.storage_fee"),
        in_msg=_message(in_msg, f"{what}.in_msg", parsed.in_msg) if in_msg is not None else None,
        out_msgs=tuple(
            _message(out, f"{what}.out_msgs[{i}]", parsed.out_msgs[i]) for i, out in enumerate(outs)
        ),
        data=boc,
        parsed=parsed,
    )


def _stack_entry(value: Any, what: str) -> tuple[str, Any]:
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str):
        raise NodeAnswerError(f"{what}: not a [type, value] entry")
    kind, item = value
    if kind == "num":
        if not isinstance(item, str):
            raise NodeAnswerError(f"{what}: a number is hex text")
        try:
            return kind, int(item, 16)
        except ValueError:
            raise NodeAnswerError(f"{what}: not a hex number ({item!r})") from None
    if kind == "cell":
        cell = _object(item, what)
        return kind, _bytes(cell.get("bytes"), f"{what}.bytes")
    return kind, item


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
            data = _object(result, "result")
            return MasterchainInfo(
                last=_block_id(data.get("last"), "last"),
                init=_block_id(data.get("init"), "init"),
                state_root_hash=_hash(data.get("state_root_hash"), "state_root_hash"),
            )

        return self._parsed("getMasterchainInfo", parse, self._call("getMasterchainInfo"))  # type: ignore[no-any-return]

    def address_information(self, address: str) -> AddressInformation:
        def parse(result: Any) -> AddressInformation:
            data = _object(result, "result")
            return AddressInformation(
                balance=_amount(data.get("balance"), "balance"),
                state=_state(data.get("state"), "state"),
                code=_bytes(data.get("code"), "code"),
                data=_bytes(data.get("data"), "data"),
                last_transaction=_transaction_id(data.get("last_transaction_id"), "last_transaction_id"),
                block=_block_id(data.get("block_id"), "block_id"),
                sync_utime=_int(data.get("sync_utime"), "sync_utime"),
            )

        result = self._call("getAddressInformation", query={"address": address})
        return self._parsed("getAddressInformation", parse, result)  # type: ignore[no-any-return]

    def wallet_information(self, address: str) -> WalletInformation:
        def parse(result: Any) -> WalletInformation:
            data = _object(result, "result")
            wallet = data.get("wallet")
            if not isinstance(wallet, bool):
                raise NodeAnswerError("wallet: not a boolean")
            wallet_type = data.get("wallet_type")
            if wallet_type is not None and not isinstance(wallet_type, str):
                raise NodeAnswerError("wallet_type: not text")
            seqno = _int(data["seqno"], "seqno") if data.get("seqno") is not None else None
            wallet_id = _int(data["wallet_id"], "wallet_id") if data.get("wallet_id") is not None else None
            if wallet and seqno is None:
                raise NodeAnswerError("a wallet without a seqno")
            return WalletInformation(
                wallet=wallet,
                balance=_amount(data.get("balance"), "balance"),
                state=_state(data.get("account_state"), "account_state"),
                last_transaction=_transaction_id(data.get("last_transaction_id"), "last_transaction_id"),
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
            data = _object(result, "result")
            entries = data.get("stack")
            if not isinstance(entries, list):
                raise NodeAnswerError("stack: not a list")
            return RunResult(
                exit_code=_int(data.get("exit_code"), "exit_code"),
                gas_used=_int(data.get("gas_used"), "gas_used"),
                stack=tuple(_stack_entry(entry, f"stack[{i}]") for i, entry in enumerate(entries)),
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
            data = _object(answer, "result")
            norm = data.get("hash_norm")
            return SentMessage(
                hash=_hash(data.get("hash"), "hash"),
                hash_norm=_hash(norm, "hash_norm") if norm is not None else None,
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
            data = _object(_object(answer, "result").get("source_fees"), "source_fees")
            return Fees(
                in_fwd_fee=_amount(data.get("in_fwd_fee"), "in_fwd_fee"),
                storage_fee=_amount(data.get("storage_fee"), "storage_fee"),
                gas_fee=_amount(data.get("gas_fee"), "gas_fee"),
                fwd_fee=_amount(data.get("fwd_fee"), "fwd_fee"),
            )

        return self._parsed("estimateFee", parse, self._call("estimateFee", body=request))  # type: ignore[no-any-return]
