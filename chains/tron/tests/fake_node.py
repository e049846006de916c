"""A fake HTTP layer for the java-tron client (chains.tron.node): answers each path with what a test set,
in the shapes java-tron documents, and remembers every request; and transactions shaped as a node writes
them."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import BaseAdapter

from chains.tron import address, proto
from chains.tron.node import TronNode
from chains.tron.proto import TransferContract
from chains.tron.transaction import Transaction, single, txid

URL = "http://tron.test:8090"
KEY = (1).to_bytes(32, "big")
OWNER = "TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC"
TO = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"
USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
BLOCK_ID = "0000000003a2f1c4" + "ab" * 24
REF = (b"\xf1\xc4", bytes.fromhex("abababababababab"))

Answer = Any  # a JSON value, a callable of the request body, or an exception to raise


class FakeHttp(BaseAdapter):
    """Answers each path with what a test set; remembers every request."""

    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[str, tuple[int, Answer]] = {}
        self.sent: list[tuple[requests.PreparedRequest, dict[str, Any]]] = []

    def on(self, path: str, answer: Answer, status: int = 200) -> None:
        self.routes[path] = (status, answer)

    def body(self, index: int = -1) -> Any:
        return json.loads(self.sent[index][0].body or b"null")

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.sent.append((request, kwargs))
        path = urlsplit(request.url).path.lstrip("/")
        status, answer = self.routes[path]
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            answer = answer(json.loads(request.body or b"null"))
        response = requests.Response()
        response.status_code = status
        response._content = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
        response.url = str(request.url)
        response.request = request
        return response

    def close(self) -> None:
        pass


def tron_node(http: FakeHttp, **options: Any) -> TronNode:
    session = requests.Session()
    session.mount("http://", http)
    return TronNode(URL, session=session, **options)


def signed_transfer(amount: int = 5_000_000) -> Transaction:
    raw = single(
        TransferContract(OWNER, TO, amount), ref_block=REF, expiration=1_700_000_060_000, timestamp=1
    )
    return Transaction.build(raw).signed(KEY)


def in_block(transaction: Transaction, result: str = "SUCCESS") -> dict[str, Any]:
    return {"ret": [{"contractRet": result}], **transaction.to_json()}


def vote_transaction() -> dict[str, Any]:
    """A VoteWitnessContract (type 4): a kind Kassa never reads, present in every real block."""
    vote = bytes.fromhex("0a15" + address.to_hex(OWNER))
    any_value = proto._len(1, b"type.googleapis.com/protocol.VoteWitnessContract") + proto._len(2, vote)
    raw = bytes.fromhex("0a02f1c4") + proto._len(11, proto._int(1, 4) + proto._len(2, any_value))
    return {
        "ret": [{"contractRet": "SUCCESS"}],
        "txID": txid(raw),
        "raw_data": {"contract": [{"type": "VoteWitnessContract", "parameter": {"value": {}}}]},
        "raw_data_hex": raw.hex(),
        "signature": [],
    }


def block_json(height: int, transactions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "blockID": f"{height:016x}" + "ab" * 24,
        "block_header": {
            "raw_data": {
                "number": height,
                "txTrieRoot": "00" * 32,
                "witness_address": "41" + "22" * 20,
                "parentHash": f"{height - 1:016x}" + "ab" * 24,
                "version": 30,
                "timestamp": 1_700_000_000_000,
            },
            "witness_signature": "00" * 65,
        },
        **({"transactions": transactions} if transactions else {}),
    }
