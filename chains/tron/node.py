"""A client of java-tron's HTTP API: only the endpoints Kassa uses, with `"visible": false` (hex addresses).

Errors are told apart the way a caller acts on them:
- `TronNodeUnavailable` (a ChainUnavailable): the node could not be reached, timed out, was rate limited
  (HTTP 429), or answered something that is not java-tron's JSON. Nothing is known to have happened.
- `TronNodeError`: the node answered and refused, with its own `code` and `message` (java-tron writes
  `{"Error": ...}`, or `code` and a hex-encoded `message`; the message is decoded to text here).
- `BroadcastError`: `wallet/broadcasttransaction` refused the transaction; `code` is java-tron's
  (`SIGERROR`, `TAPOS_ERROR`, `TRANSACTION_EXPIRATION_ERROR`, `BANDWITH_ERROR` as java-tron spells it,
  `CONTRACT_VALIDATE_ERROR`...). `DuplicateTransaction` is its `DUP_TRANSACTION_ERROR`: the node has it.
- `NodeAnswerError` (a ChainUnavailable too): the node answered in a shape java-tron does not write, or
  with a transaction whose JSON and bytes disagree. The caller waits and logs it, as for an outage.
A transaction the node builds (createtransaction, triggersmartcontract, delegate/undelegateresource) is read
from its bytes and must be the one asked for, else `NodeAnswerError`: a node never chooses what is signed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import requests

from chains.answers import limited_session
from chains.base import ChainUnavailable
from chains.tron import address
from chains.tron.proto import (
    ContractMessage,
    DelegateResourceContract,
    ProtoError,
    Resource,
    TransferContract,
    TriggerSmartContract,
    UnDelegateResourceContract,
)
from chains.tron.results import (
    Account,
    AccountResource,
    Block,
    ChainParameters,
    ConstantResult,
    NodeAnswerError,
    NodeInfo,
    NodeTransaction,
    TransactionInfo,
    TronGridPage,
    TronGridTransfer,
    hex_message,
)
from chains.tron.transaction import Transaction, TransactionMismatch

CONNECT_TIMEOUT_SECONDS = 3
READ_TIMEOUT_SECONDS = 15
API_KEY_HEADER = "TRON-PRO-API-KEY"
DUP_TRANSACTION_ERROR = "DUP_TRANSACTION_ERROR"


class TronNodeUnavailable(ChainUnavailable):
    """The node could not be asked, or did not answer as java-tron does: try again later."""


class TronNodeError(Exception):
    """The node answered the call with a refusal."""

    def __init__(self, endpoint: str, code: str, message: str) -> None:
        super().__init__(f"{endpoint}: {code}: {message}" if message else f"{endpoint}: {code}")
        self.endpoint = endpoint
        self.code = code
        self.message = message


class BroadcastError(TronNodeError):
    """`wallet/broadcasttransaction` refused the transaction (`code`: java-tron's response code)."""


class DuplicateTransaction(BroadcastError):
    """The node has this transaction already (DUP_TRANSACTION_ERROR): it was sent before."""


class TronNode:
    """One java-tron node (or TronGrid). `solidity_url`: where `walletsolidity/` is served, when not at
    `url` (a full node serves it on its own port, 8091 by default); `api_key`: TronGrid's key."""

    def __init__(
        self,
        url: str,
        *,
        solidity_url: str | None = None,
        api_key: str | None = None,
        timeout: float = READ_TIMEOUT_SECONDS,
        session: requests.Session | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("a TRON node's url is http(s)://host:port")
        self.url = url.rstrip("/")
        self.solidity_url = (solidity_url or url).rstrip("/")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers[API_KEY_HEADER] = api_key
        self._timeout = (CONNECT_TIMEOUT_SECONDS, timeout)
        self._session = session or limited_session()  # answers capped in size and depth (chains.answers)

    # --- transport -----------------------------------------------------------------------------------

    def _request(self, method: str, base: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        where = f"{base}/{path}"
        try:
            response = self._session.request(
                method,
                where,
                data=json.dumps(body).encode() if body is not None else None,
                headers=self._headers,
                timeout=self._timeout,
            )
        except requests.RequestException as exc:
            raise TronNodeUnavailable(f"{base}: {path}: {type(exc).__name__}") from exc
        if response.status_code == 429:
            raise TronNodeUnavailable(f"{base}: {path}: rate limited (HTTP 429)")
        try:
            # Numbers are exact: an int stays an int, and a fraction is never a binary float.
            answer = json.loads(response.content, parse_float=Decimal)
        except ValueError:
            raise TronNodeUnavailable(f"{base}: {path}: HTTP {response.status_code}, not JSON") from None
        if isinstance(answer, dict) and "Error" in answer:
            raise TronNodeError(path, "Error", str(answer["Error"]))
        if isinstance(answer, dict) and answer.get("success") is False:  # TronGrid's v1 API refusing
            raise TronNodeError(path.partition("?")[0], "error", str(answer.get("error", "")))
        if response.status_code >= 400:
            raise TronNodeUnavailable(f"{base}: {path}: HTTP {response.status_code}")
        return answer

    def _post(self, path: str, body: Mapping[str, Any] | None = None, *, solid: bool = False) -> Any:
        base, prefix = (self.solidity_url, "walletsolidity") if solid else (self.url, "wallet")
        return self._request("POST", base, f"{prefix}/{path}", {**(body or {}), "visible": False})

    def _object(
        self, path: str, body: Mapping[str, Any] | None = None, *, solid: bool = False
    ) -> dict[str, Any]:
        answer = self._post(path, body, solid=solid)
        if not isinstance(answer, dict):
            raise TronNodeUnavailable(f"{self.url}: {path}: the answer is not a JSON object")
        return answer

    def _parsed(self, path: str, parse: Any, *args: Any) -> Any:
        try:
            return parse(*args)
        except (NodeAnswerError, TransactionMismatch, ProtoError) as exc:
            raise NodeAnswerError(f"{path}: {exc}") from None
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise NodeAnswerError(f"{path}: not java-tron's shape ({type(exc).__name__}: {exc})") from None

    # --- reading the chain ---------------------------------------------------------------------------

    def node_info(self) -> NodeInfo:
        return self._parsed("getnodeinfo", NodeInfo.parse, self._object("getnodeinfo"))

    def now_block(self, *, solid: bool = False) -> Block:
        """The head block, or the latest solidified one (`solid`)."""
        return self._parsed("getnowblock", Block.parse, self._object("getnowblock", solid=solid))

    def block(self, height: int, *, solid: bool = False) -> Block | None:
        """Block `height`; None above the head (or above the solidified height, `solid`)."""
        answer = self._object("getblockbynum", {"num": height}, solid=solid)
        return self._parsed("getblockbynum", Block.parse, answer) if answer else None

    def transaction_infos(self, height: int) -> list[TransactionInfo]:
        """The receipts of every transaction of block `height`, in the block's order."""
        answer = self._post("gettransactioninfobyblocknum", {"num": height})
        if answer == {}:
            return []
        if not isinstance(answer, list):
            raise NodeAnswerError("gettransactioninfobyblocknum: not a list")
        return [self._parsed("gettransactioninfobyblocknum", TransactionInfo.parse, item) for item in answer]

    def transaction(self, txid: str) -> NodeTransaction | None:
        """The transaction `txid` if the node knows it (in a block or waiting), else None."""
        answer = self._object("gettransactionbyid", {"value": txid})
        return self._parsed("gettransactionbyid", NodeTransaction.parse, answer) if answer else None

    def transaction_info(self, txid: str, *, solid: bool = False) -> TransactionInfo | None:
        """The receipt of `txid` once it is in a block (in a solidified one, `solid`), else None."""
        answer = self._object("gettransactioninfobyid", {"value": txid}, solid=solid)
        return self._parsed("gettransactioninfobyid", TransactionInfo.parse, answer) if answer else None

    def account(self, owner: str) -> Account:
        answer = self._object("getaccount", {"address": address.to_hex(owner)})
        return self._parsed("getaccount", Account.parse, owner, answer)

    def account_resource(self, owner: str) -> AccountResource:
        answer = self._object("getaccountresource", {"address": address.to_hex(owner)})
        return self._parsed("getaccountresource", AccountResource.parse, answer)

    def chain_parameters(self) -> ChainParameters:
        return self._parsed("getchainparameters", ChainParameters.parse, self._object("getchainparameters"))

    def trigger_constant(
        self, owner: str, contract: str, data: bytes, *, call_value: int = 0
    ) -> ConstantResult:
        """What calling `contract` with `data` would return and the energy it would use (nothing is sent)."""
        body = _call_body(owner, contract, data, call_value)
        answer = self._object("triggerconstantcontract", body)
        _raise_result("triggerconstantcontract", answer)
        return self._parsed("triggerconstantcontract", _constant, answer)

    def trc20_transfers(
        self,
        owner: str,
        *,
        contract: str | None = None,
        only_to: bool = True,
        only_confirmed: bool = True,
        min_timestamp: int | None = None,
        limit: int = 50,
        fingerprint: str | None = None,
    ) -> TronGridPage:
        """TronGrid's `v1/accounts/{owner}/transactions/trc20`: one page of an address's TRC-20 transfers,
        for rechecks (scanning goes by blocks: per-address queries do not scale)."""
        query: dict[str, Any] = {"only_to": only_to, "only_confirmed": only_confirmed, "limit": limit}
        if contract:
            query["contract_address"] = address.to_base58(contract)
        if min_timestamp is not None:
            query["min_timestamp"] = min_timestamp
        if fingerprint:
            query["fingerprint"] = fingerprint
        text = "&".join(
            f"{key}={quote(str(value).lower() if isinstance(value, bool) else str(value))}"
            for key, value in query.items()
        )
        path = f"v1/accounts/{address.to_base58(owner)}/transactions/trc20?{text}"
        answer = self._request("GET", self.url, path)
        if not isinstance(answer, dict) or answer.get("success") is not True:
            raise NodeAnswerError(f"{path}: not TronGrid's answer")
        page = self._parsed(
            path, lambda: tuple(TronGridTransfer.parse(item) for item in answer.get("data") or [])
        )
        meta = answer.get("meta") or {}
        return TronGridPage(page, meta.get("fingerprint") if isinstance(meta, dict) else None)

    # --- transactions built by the node ---------------------------------------------------------------

    def create_transaction(self, owner: str, to: str, amount: int) -> Transaction:
        """A TRX transfer of `amount` sun, unsigned, built by the node (a recent block as its reference)."""
        body = {"owner_address": address.to_hex(owner), "to_address": address.to_hex(to), "amount": amount}
        return self._built("createtransaction", body, TransferContract(owner, to, amount))

    def trigger_smart_contract(
        self, owner: str, contract: str, data: bytes, *, fee_limit: int, call_value: int = 0
    ) -> Transaction:
        """A call of `contract` with `data` (a TRC-20 transfer), unsigned, burning at most `fee_limit`."""
        body = {**_call_body(owner, contract, data, call_value), "fee_limit": fee_limit}
        answer = self._object("triggersmartcontract", body)
        _raise_result("triggersmartcontract", answer)
        expected = TriggerSmartContract(owner, contract, data=data, call_value=call_value)
        transaction = self._checked("triggersmartcontract", answer.get("transaction"), expected)
        if transaction.raw.fee_limit != fee_limit:
            raise NodeAnswerError(
                f"triggersmartcontract: fee_limit {transaction.raw.fee_limit}, not {fee_limit}"
            )
        return transaction

    def delegate_resource(
        self,
        owner: str,
        receiver: str,
        balance: int,
        *,
        resource: Resource = Resource.ENERGY,
        lock: bool = False,
        lock_period: int = 0,
    ) -> Transaction:
        """Delegate the `resource` of `balance` sun of `owner`'s staked TRX to `receiver` (Stake 2.0)."""
        body: dict[str, Any] = {
            "owner_address": address.to_hex(owner),
            "receiver_address": address.to_hex(receiver),
            "balance": balance,
            "resource": resource.name,
            "lock": lock,
        }
        if lock_period:
            body["lock_period"] = lock_period
        expected = DelegateResourceContract(owner, resource, balance, receiver, lock, lock_period)
        return self._built("delegateresource", body, expected)

    def undelegate_resource(
        self, owner: str, receiver: str, balance: int, *, resource: Resource = Resource.ENERGY
    ) -> Transaction:
        body = {
            "owner_address": address.to_hex(owner),
            "receiver_address": address.to_hex(receiver),
            "balance": balance,
            "resource": resource.name,
        }
        return self._built(
            "undelegateresource", body, UnDelegateResourceContract(owner, resource, balance, receiver)
        )

    def _built(self, path: str, body: Mapping[str, Any], expected: ContractMessage) -> Transaction:
        return self._checked(path, self._object(path, body), expected)

    def _checked(self, path: str, answer: Any, expected: ContractMessage) -> Transaction:
        transaction: Transaction = self._parsed(path, Transaction.from_json, _object_of(path, answer))
        built = self._parsed(path, lambda: transaction.contract)  # exactly one contract
        if built != expected:
            raise NodeAnswerError(f"{path}: the node built {built}, not {expected}")
        return transaction

    # --- sending -------------------------------------------------------------------------------------

    def broadcast(self, transaction: Transaction) -> str:
        """Send a signed transaction; its txid once the node took it, else BroadcastError."""
        answer = self._object("broadcasttransaction", transaction.to_json())
        if answer.get("result") is True:
            if str(answer.get("txid", transaction.txid)).lower() != transaction.txid:
                raise NodeAnswerError(
                    f"broadcasttransaction: took {answer.get('txid')}, not {transaction.txid}"
                )
            return transaction.txid
        code = answer.get("code")
        if not isinstance(code, str) or not code:
            raise NodeAnswerError("broadcasttransaction: neither a result nor a code")
        message = hex_message(str(answer.get("message", "")))
        cls = DuplicateTransaction if code == DUP_TRANSACTION_ERROR else BroadcastError
        raise cls("broadcasttransaction", code, message)


def _call_body(owner: str, contract: str, data: bytes, call_value: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "owner_address": address.to_hex(owner),
        "contract_address": address.to_hex(contract),
        "data": data.hex(),
    }
    if call_value:
        body["call_value"] = call_value
    return body


def _raise_result(path: str, answer: Mapping[str, Any]) -> None:
    """triggersmartcontract and triggerconstantcontract answer a refusal as `result: {code, message}`."""
    result = answer.get("result")
    if not isinstance(result, dict):
        raise NodeAnswerError(f"{path}: no result")
    if result.get("result") is not True:
        raise TronNodeError(
            path, str(result.get("code") or "OTHER_ERROR"), hex_message(str(result.get("message", "")))
        )


def _constant(answer: Mapping[str, Any]) -> ConstantResult:
    energy = answer.get("energy_used", 0)
    if isinstance(energy, bool) or not isinstance(energy, int):
        raise NodeAnswerError("energy_used is a whole number")
    results = tuple(bytes.fromhex(item) for item in answer.get("constant_result") or [])
    ret = ((answer.get("transaction") or {}).get("ret") or [{}])[0]
    reverted = ret.get("ret") == "FAILED"
    message = hex_message(str((answer.get("result") or {}).get("message", "")))
    return ConstantResult(energy, results, reverted, message if reverted else "")


def _object_of(path: str, answer: Any) -> Mapping[str, Any]:
    if not isinstance(answer, Mapping) or not answer:
        raise NodeAnswerError(f"{path}: no transaction in the answer")
    return answer
