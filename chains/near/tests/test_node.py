"""The NEAR client on a fake HTTP layer answering as nearcore does (recorded.py): requests, reads, errors."""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any

import pytest
import requests
from requests.adapters import BaseAdapter

from chains.base import ChainUnavailable
from chains.near.errors import NearNodeUnavailable, NearTxRefused, NodeAnswerError
from chains.near.node import NearNode
from chains.near.results import FAILURE, PENDING, SUCCESS
from chains.near.tests import recorded
from chains.near.tests.recorded import (
    BLOCK,
    BLOCK_HASH,
    CHUNK,
    CHUNK_HASH,
    DEPOSIT,
    HEIGHT,
    PREV_HASH,
    RECEIPT_MIXED,
    RECEIPT_PAYMENT,
    TX_HASH,
    TX_STATUS,
    changed,
)

URL = "https://near.test/rpc"
KEY = "s3cr3t-key"


class FakeRpc(BaseAdapter):
    """Answers each method with a whole body (the request's id set in it), raw text, or an exception."""

    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[str, tuple[int, Any]] = {}
        self.sent: list[requests.PreparedRequest] = []

    def result(self, method: str, result: Any) -> None:
        self.routes[method] = (200, recorded.response(result))

    def body(self, method: str, body: Any, status: int = 200) -> None:
        self.routes[method] = (status, body)

    def request(self, index: int = -1) -> dict[str, Any]:
        return json.loads(self.sent[index].body or b"null")  # type: ignore[no-any-return]

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.sent.append(request)
        call = json.loads(request.body or b"null")
        status, body = self.routes[call["method"]]
        if isinstance(body, Exception):
            raise body
        if isinstance(body, dict) and "jsonrpc" in body and body.get("id") == "dontcare":
            body = {**body, "id": call["id"]}
        response = requests.Response()
        response.status_code = status
        response._content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        response.request = request
        return response

    def close(self) -> None:
        pass


@pytest.fixture
def rpc() -> FakeRpc:
    return FakeRpc()


def near_node(rpc: FakeRpc, **options: Any) -> NearNode:
    session = requests.Session()
    session.mount("https://", rpc)
    return NearNode(URL, session=session, **options)


# --- what is sent --------------------------------------------------------------------------------------


def test_a_call_is_json_rpc_with_named_params_and_the_api_key_header(rpc: FakeRpc) -> None:
    rpc.result("block", BLOCK)

    near_node(rpc, api_key=KEY).final_block()

    assert rpc.request() == {"jsonrpc": "2.0", "id": 1, "method": "block", "params": {"finality": "final"}}
    assert (
        rpc.sent[0].headers["x-api-key"] == KEY and rpc.sent[0].headers["Content-Type"] == "application/json"
    )


def test_no_api_key_no_header(rpc: FakeRpc) -> None:
    rpc.result("block", BLOCK)

    near_node(rpc).head_block()

    assert "x-api-key" not in rpc.sent[0].headers
    assert rpc.request()["params"] == {"finality": "optimistic"}


@pytest.mark.parametrize(
    ("call", "method", "params"),
    [
        (lambda n: n.block(HEIGHT), "block", {"block_id": HEIGHT}),
        (lambda n: n.block(BLOCK_HASH), "block", {"block_id": BLOCK_HASH}),
        (lambda n: n.chunk(CHUNK_HASH), "chunk", {"chunk_id": CHUNK_HASH}),
        (
            lambda n: n.tx_status(TX_HASH, "rpc-examples.testnet"),
            "EXPERIMENTAL_tx_status",
            {"tx_hash": TX_HASH, "sender_account_id": "rpc-examples.testnet", "wait_until": "NONE"},
        ),
        (lambda n: n.receipt_outcome(RECEIPT_PAYMENT, DEPOSIT, BLOCK_HASH), "EXPERIMENTAL_light_client_proof",
         {"type": "receipt", "receipt_id": RECEIPT_PAYMENT, "receiver_id": DEPOSIT,
          "light_client_head": BLOCK_HASH}),
        (lambda n: n.account(DEPOSIT), "query",
         {"request_type": "view_account", "account_id": DEPOSIT, "finality": "final"}),
        (lambda n: n.access_key(DEPOSIT, recorded.PUBLIC_KEY, "optimistic"), "query",
         {"request_type": "view_access_key", "account_id": DEPOSIT, "public_key": recorded.PUBLIC_KEY,
          "finality": "optimistic"}),
        (lambda n: n.gas_price(), "gas_price", {"block_id": None}),
        (lambda n: n.genesis_validity(), "EXPERIMENTAL_genesis_config", {}),
    ],
)  # fmt: skip
def test_each_method_sends_its_documented_params(rpc: FakeRpc, call: Any, method: str, params: Any) -> None:
    rpc.body(method, recorded.UNKNOWN_BLOCK)  # the answer does not matter here

    with contextlib.suppress(NearNodeUnavailable):
        call(near_node(rpc))

    assert rpc.request()["method"] == method and rpc.request()["params"] == params


def test_send_tx_sends_base64_and_never_waits(rpc: FakeRpc) -> None:
    rpc.result("send_tx", recorded.TX_RECEIVED)

    near_node(rpc).send_tx(b"\x01\x02\x03")

    assert rpc.request()["params"] == {
        "signed_tx_base64": base64.b64encode(b"\x01\x02\x03").decode(),
        "wait_until": "NONE",
    }


# --- what is read --------------------------------------------------------------------------------------


def test_a_block_is_read_with_its_chunks(rpc: FakeRpc) -> None:
    rpc.result("block", BLOCK)

    block = near_node(rpc).block(HEIGHT)

    assert block is not None and (block.height, block.hash, block.prev_hash) == (
        HEIGHT,
        BLOCK_HASH,
        PREV_HASH,
    )
    assert block.timestamp_ns == 1_739_254_177_539_033_760
    assert [(c.chunk_hash, c.shard_id, c.height_included) for c in block.chunks] == [
        (CHUNK_HASH, 0, HEIGHT),
        (recorded.OLD_CHUNK_HASH, 1, HEIGHT - 1),
    ]
    assert [c.chunk_hash for c in block.new_chunks()] == [CHUNK_HASH]


def test_a_chunk_lists_its_action_receipts_with_their_transfers(rpc: FakeRpc) -> None:
    rpc.result("chunk", CHUNK)

    chunk = near_node(rpc).chunk(CHUNK_HASH)

    assert chunk is not None and chunk.transactions == 1
    payment, mixed, refund = chunk.receipts  # the data receipt is skipped
    assert (payment.receipt_id, payment.predecessor_id, payment.receiver_id) == (
        RECEIPT_PAYMENT,
        recorded.PAYER,
        DEPOSIT,
    )
    assert payment.transfers == ((0, 100_000_000_000_000_000_000_000),) and payment.actions == 1
    assert mixed.receipt_id == RECEIPT_MIXED and mixed.signer_id == "rpc-examples.testnet"
    assert mixed.transfers == ((1, 5_000_000_000_000_000_000_000_000),) and mixed.actions == 3
    assert refund.predecessor_id == "system" and refund.transfers == ((0, 12_524_843_062_500_000_000),)


def test_tx_status_reads_every_outcome_and_sums_the_burnt(rpc: FakeRpc) -> None:
    rpc.result("EXPERIMENTAL_tx_status", TX_STATUS)

    result = near_node(rpc).tx_status(TX_HASH, "rpc-examples.testnet")

    assert result is not None and result.hash == TX_HASH and result.final and result.status == SUCCESS
    assert result.transaction_outcome.status == SUCCESS  # SuccessReceiptId
    assert [o.id for o in result.receipts_outcome] == [RECEIPT_MIXED, recorded.RECEIPT_REFUND]
    assert result.tokens_burnt == 2 * 417_494_768_750_000_000_000 and result.failure() == ""


@pytest.mark.parametrize(
    ("level", "final"),
    [("INCLUDED", False), ("EXECUTED_OPTIMISTIC", False), ("EXECUTED", False), ("FINAL", True)],
)
def test_the_execution_level_is_read_as_given(rpc: FakeRpc, level: str, final: bool) -> None:
    rpc.result("EXPERIMENTAL_tx_status", changed(TX_STATUS, "final_execution_status", level))

    result = near_node(rpc).tx_status(TX_HASH, "rpc-examples.testnet")

    assert result is not None and result.final_execution_status == level and result.final is final


def test_a_failed_receipt_gives_the_transaction_its_failure(rpc: FakeRpc) -> None:
    failed = changed(TX_STATUS, "receipts_outcome.0.outcome.status", recorded.FAILURE)
    rpc.result("EXPERIMENTAL_tx_status", changed(failed, "status", recorded.FAILURE))

    result = near_node(rpc).tx_status(TX_HASH, "rpc-examples.testnet")

    assert result is not None and result.status == FAILURE
    assert result.receipts_outcome[0].status == FAILURE
    assert result.failure().startswith("AccountDoesNotExist")


def test_a_transaction_only_received_is_none(rpc: FakeRpc) -> None:
    rpc.result("EXPERIMENTAL_tx_status", recorded.TX_RECEIVED)

    assert near_node(rpc).tx_status(TX_HASH, "rpc-examples.testnet") is None


def test_a_receipt_outcome_by_light_client_proof(rpc: FakeRpc) -> None:
    rpc.result("EXPERIMENTAL_light_client_proof", recorded.LIGHT_CLIENT_PROOF)

    outcome = near_node(rpc).receipt_outcome(RECEIPT_PAYMENT, DEPOSIT, BLOCK_HASH)

    assert outcome is not None and (outcome.id, outcome.block_hash, outcome.executor_id) == (
        RECEIPT_PAYMENT,
        BLOCK_HASH,
        DEPOSIT,
    )
    assert outcome.status == SUCCESS and outcome.tokens_burnt == 0


@pytest.mark.parametrize(("status", "read"), [("Unknown", PENDING), (recorded.FAILURE, FAILURE)])
def test_a_receipt_not_executed_yet_is_pending_and_a_failed_one_fails(
    rpc: FakeRpc, status: Any, read: str
) -> None:
    rpc.result(
        "EXPERIMENTAL_light_client_proof",
        changed(recorded.LIGHT_CLIENT_PROOF, "outcome_proof.outcome.status", status),
    )

    outcome = near_node(rpc).receipt_outcome(RECEIPT_PAYMENT, DEPOSIT, BLOCK_HASH)

    assert outcome is not None and outcome.status == read
    assert (outcome.failure != "") is (read == FAILURE)


def test_state_gas_price_and_validity(rpc: FakeRpc) -> None:
    rpc.result("gas_price", recorded.GAS_PRICE)
    rpc.result("EXPERIMENTAL_genesis_config", recorded.GENESIS_CONFIG)
    rpc.result("query", recorded.VIEW_ACCOUNT)
    node = near_node(rpc)

    account = node.account("nearkat.testnet")

    assert account is not None and account.amount == 399_992_611_103_597_728_750_000_000
    assert (account.locked, account.storage_usage, account.block_height) == (0, 642, 17_795_474)
    assert node.gas_price() == 100_000_000 and node.genesis_validity() == 86_400


@pytest.mark.parametrize(
    ("permission", "full"), [("FullAccess", True), (recorded.FUNCTION_CALL_PERMISSION, False)]
)
def test_an_access_key_gives_its_nonce_and_block(rpc: FakeRpc, permission: Any, full: bool) -> None:
    rpc.result("query", changed(recorded.VIEW_ACCESS_KEY, "permission", permission))

    key = near_node(rpc).access_key(DEPOSIT, recorded.PUBLIC_KEY)

    assert key is not None and key.nonce == 187_309_654_000_001 and key.full_access is full
    assert (key.block_height, key.block_hash) == (187_316_844, "J1zkrK8sHuzzV8pkXsEPrZH8SStUJPJSF5YNnTnMK7Gq")


def test_an_unknown_access_key_answered_as_a_result_is_none(rpc: FakeRpc) -> None:
    rpc.result("query", recorded.ACCESS_KEY_UNKNOWN)

    assert near_node(rpc).access_key(DEPOSIT, recorded.PUBLIC_KEY) is None


def test_another_error_result_for_an_access_key_is_refused(rpc: FakeRpc) -> None:
    rpc.result("query", {**recorded.ACCESS_KEY_UNKNOWN, "error": "wasm execution failed"})

    with pytest.raises(NodeAnswerError):
        near_node(rpc).access_key(DEPOSIT, recorded.PUBLIC_KEY)


# --- errors --------------------------------------------------------------------------------------------

PROOF = "EXPERIMENTAL_light_client_proof"
UNKNOWN_OR = recorded.UNKNOWN_TRANSACTION_OR_RECEIPT
NOT_FOUND = [
    ("block", lambda n: n.block(HEIGHT + 1), recorded.UNKNOWN_BLOCK),
    ("chunk", lambda n: n.chunk(CHUNK_HASH), recorded.UNKNOWN_CHUNK),
    ("query", lambda n: n.account(DEPOSIT), recorded.UNKNOWN_ACCOUNT),
    ("query", lambda n: n.access_key(DEPOSIT, recorded.PUBLIC_KEY), recorded.UNKNOWN_ACCESS_KEY),
    ("query", lambda n: n.account(DEPOSIT), recorded.UNKNOWN_BLOCK),
    ("EXPERIMENTAL_tx_status", lambda n: n.tx_status(TX_HASH, DEPOSIT), recorded.UNKNOWN_TRANSACTION),
    (PROOF, lambda n: n.receipt_outcome(RECEIPT_PAYMENT, DEPOSIT, BLOCK_HASH), UNKNOWN_OR),
    (PROOF, lambda n: n.receipt_outcome(RECEIPT_PAYMENT, DEPOSIT, BLOCK_HASH), recorded.NOT_CONFIRMED),
]  # fmt: skip


@pytest.mark.parametrize(("method", "call", "body"), NOT_FOUND)
def test_what_the_node_does_not_know_is_none(rpc: FakeRpc, method: str, call: Any, body: Any) -> None:
    rpc.body(method, body)

    assert call(near_node(rpc)) is None


@pytest.mark.parametrize(
    ("invalid", "kind"),
    [
        (recorded.INVALID_NONCE, "InvalidNonce"),
        (recorded.EXPIRED, "Expired"),
        (recorded.NOT_ENOUGH_BALANCE, "NotEnoughBalance"),
    ],
)
@pytest.mark.parametrize("in_info", [False, True])
def test_a_refused_transaction_names_its_invalid_tx_error(
    rpc: FakeRpc, invalid: Any, kind: str, in_info: bool
) -> None:
    rpc.body("send_tx", recorded.invalid_transaction(invalid, in_info=in_info))

    with pytest.raises(NearTxRefused) as raised:
        near_node(rpc).send_tx(b"\x01")

    assert raised.value.kind == kind and raised.value.cause == "INVALID_TRANSACTION"
    assert not isinstance(raised.value, ChainUnavailable)


def test_a_legacy_tx_execution_error_is_a_refusal_too(rpc: FakeRpc) -> None:
    detail = {"TxExecutionError": {"InvalidTxError": recorded.INVALID_NONCE}}
    error = {
        "name": "HANDLER_ERROR",
        "cause": detail,
        "code": -32000,
        "message": "Server error",
        "data": detail,
    }
    rpc.body("send_tx", {"jsonrpc": "2.0", "error": error, "id": "dontcare"})

    with pytest.raises(NearTxRefused) as raised:
        near_node(rpc).send_tx(b"\x01")

    assert raised.value.kind == "InvalidNonce"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (408, recorded.TIMEOUT),
        (500, recorded.INTERNAL),
        (400, recorded.PARSE),
        (429, {"jsonrpc": "2.0", "error": {"code": 429, "message": "Too many requests"}, "id": "dontcare"}),
        (401, "Unauthorized"),
        (500, "<html><body>500 Internal Server Error</body></html>"),
        (200, "<html>not json</html>"),
        (200, {"jsonrpc": "2.0", "result": BLOCK, "id": 99}),
        (200, {"result": BLOCK}),
        (200, {"jsonrpc": "2.0", "error": "busy", "id": "dontcare"}),
        (200, requests.ConnectionError("refused")),
    ],
)
def test_what_is_not_a_node_answering_is_unavailable(rpc: FakeRpc, status: int, body: Any) -> None:
    rpc.body("block", body, status=status)

    with pytest.raises(NearNodeUnavailable) as raised:
        near_node(rpc, api_key=KEY).final_block()

    assert isinstance(raised.value, ChainUnavailable) and not isinstance(raised.value, NearTxRefused)
    assert KEY not in str(raised.value) and KEY not in repr(raised.value.__cause__)


def test_a_key_in_the_url_is_not_shown(rpc: FakeRpc) -> None:
    session = requests.Session()
    session.mount("https://", rpc)
    rpc.body("block", "nope", status=502)

    with pytest.raises(NearNodeUnavailable) as raised:
        NearNode(f"https://near.test/{KEY}?apikey={KEY}", session=session).final_block()

    assert KEY not in str(raised.value) and "https://near.test" in str(raised.value)


# --- hostile answers -----------------------------------------------------------------------------------

DEPOSIT_AT = "receipts.0.receipt.Action.actions.0.Transfer.deposit"
ANSWERS: dict[str, tuple[str, Any, Any]] = {
    "block": ("block", lambda n: n.final_block(), BLOCK),
    "chunk": ("chunk", lambda n: n.chunk(CHUNK_HASH), CHUNK),
    "tx": ("EXPERIMENTAL_tx_status", lambda n: n.tx_status(TX_HASH, DEPOSIT), TX_STATUS),
    "proof": (
        "EXPERIMENTAL_light_client_proof",
        lambda n: n.receipt_outcome(RECEIPT_PAYMENT, DEPOSIT, BLOCK_HASH),
        recorded.LIGHT_CLIENT_PROOF,
    ),
    "account": ("query", lambda n: n.account(DEPOSIT), recorded.VIEW_ACCOUNT),
    "key": ("query", lambda n: n.access_key(DEPOSIT, recorded.PUBLIC_KEY), recorded.VIEW_ACCESS_KEY),
    "gas": ("gas_price", lambda n: n.gas_price(), recorded.GAS_PRICE),
    "genesis": ("EXPERIMENTAL_genesis_config", lambda n: n.genesis_validity(), recorded.GENESIS_CONFIG),
}


@pytest.mark.parametrize(
    ("answer", "path", "value"),
    [
        ("block", "header.height", "187310138"), ("block", "header.height", True),
        ("block", "header.height", 187310138.0), ("block", "header.height", -1),
        ("block", "header.hash", ...), ("block", "header.hash", 12345), ("block", "header.prev_hash", ["x"]),
        ("block", "chunks", {"0": BLOCK["chunks"][0]}), ("block", "chunks.0.height_included", None),
        ("block", "chunks.0.chunk_hash", "x" * 200), ("chunk", DEPOSIT_AT, 10**23),
        ("chunk", DEPOSIT_AT, 1e23), ("chunk", DEPOSIT_AT, "-1"), ("chunk", DEPOSIT_AT, str(2**128)),
        ("chunk", DEPOSIT_AT, "1e23"),
        ("chunk", "receipts.0.receipt.Action.actions.0.Transfer", "1"),
        ("chunk", "receipts.0.receipt.Action.actions", None), ("chunk", "receipts.0.receiver_id", None),
        ("chunk", "receipts", "[]"), ("tx", "final_execution_status", "DONE"), ("tx", "status", {"Ok": None}),
        ("tx", "transaction_outcome.outcome.tokens_burnt", 4.17e20), ("tx", "receipts_outcome", {}),
        ("proof", "outcome_proof", ...), ("account", "amount", 399992611103597728750000000),
        ("account", "amount", " 1"), ("account", "storage_usage", "642"), ("key", "nonce", 2**64),
        ("key", "block_hash", None), ("gas", "gas_price", 100000000),
        ("genesis", "transaction_validity_period", ...),
    ],
)  # fmt: skip
def test_an_answer_not_in_nearcores_shape_is_refused(
    rpc: FakeRpc, answer: str, path: str, value: Any
) -> None:
    method, call, recorded_answer = ANSWERS[answer]
    rpc.result(method, changed(recorded_answer, path, value))

    with pytest.raises(NodeAnswerError):
        call(near_node(rpc))


def test_deeply_nested_junk_is_refused(rpc: FakeRpc) -> None:
    junk: Any = 1
    for _ in range(200):
        junk = {"header": {"height": junk}, "chunks": []}
    rpc.result("block", junk)

    with pytest.raises(NodeAnswerError):
        near_node(rpc).final_block()
