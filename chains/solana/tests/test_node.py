"""The Solana client over a fake HTTP layer answering as Agave does (recorded.py): what it sends, what it
reads, and each way an answer is refused (NodeAnswerError) or an error is typed."""

from __future__ import annotations

import base64

import pytest
import requests
from solders.hash import Hash
from solders.keypair import Keypair

from chains.base import ChainUnavailable
from chains.solana import errors
from chains.solana.errors import NodeAnswerError, SolanaNodeUnavailable
from chains.solana.node import SolanaNode, first_signature
from chains.solana.tests import recorded
from chains.solana.tests.fake_node import URL, FakeRpc, solana_node
from chains.solana.tests.recorded import (
    BLOCKHASH,
    CUSTOMER,
    MERCHANT,
    REFERENCE,
    SIG1,
    SIG3,
    SOLANA_PAY_V0,
    changed,
)
from tests.solana_devnet import wallet


def test_a_call_is_json_rpc_with_the_commitment_api_key_and_timeouts(rpc: FakeRpc) -> None:
    rpc.result("getBalance", {"context": recorded.CONTEXT, "value": 8_749_994_950})

    lamports = solana_node(rpc, api_key="k3y").balance(CUSTOMER, commitment="confirmed")

    assert lamports == 8_749_994_950
    request, kwargs = rpc.sent[0]
    assert rpc.request() == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "getBalance",
        "params": [CUSTOMER, {"commitment": "confirmed"}],
    }
    assert request.method == "POST" and request.url == URL
    assert request.headers["x-api-key"] == "k3y" and request.headers["Content-Type"] == "application/json"
    assert kwargs["timeout"] == (3, 15)


def test_no_api_key_no_header_and_finalized_by_default(rpc: FakeRpc) -> None:
    rpc.result("getSlot", 341_279_811)

    assert solana_node(rpc).slot() == 341_279_811

    assert "x-api-key" not in rpc.sent[0][0].headers
    assert rpc.request()["params"] == [{"commitment": "finalized"}]


def test_latest_blockhash_and_block_height(rpc: FakeRpc) -> None:
    rpc.result("getLatestBlockhash", recorded.LATEST_BLOCKHASH)
    rpc.result("getBlockHeight", 319_562_877)
    node = solana_node(rpc)

    blockhash = node.latest_blockhash("confirmed")

    assert (blockhash.blockhash, blockhash.last_valid_block_height) == (BLOCKHASH, 319_563_027)
    assert blockhash.context_slot == recorded.CONTEXT["slot"]
    assert node.block_height("confirmed") == 319_562_877


def test_signatures_for_address_pages_newest_first(rpc: FakeRpc) -> None:
    rpc.result("getSignaturesForAddress", recorded.SIGNATURES_FOR_ADDRESS)

    items = solana_node(rpc).signatures_for_address(MERCHANT, before=SIG3, until=SIG1, limit=10)

    assert rpc.request()["params"] == [
        MERCHANT,
        {"commitment": "finalized", "limit": 10, "before": SIG3, "until": SIG1},
    ]
    assert [(i.signature, i.slot, i.memo, i.confirmation_status) for i in items] == [
        (SIG3, 341_279_820, None, "finalized"),
        (SIG1, 341_279_800, "[14] kassa:inv_8XK2", "finalized"),
    ]
    assert items[0].err == {"InstructionError": [0, {"Custom": 1}]} and items[1].err is None
    assert items[1].block_time == 1_750_000_123


def test_a_v0_transaction_is_read_whole(rpc: FakeRpc) -> None:
    rpc.result("getTransaction", SOLANA_PAY_V0)

    transaction = solana_node(rpc).transaction(SIG1, commitment="confirmed")

    assert rpc.request()["params"] == [
        SIG1,
        {"commitment": "confirmed", "encoding": "json", "maxSupportedTransactionVersion": 0},
    ]
    assert transaction is not None and transaction.signature == SIG1 and transaction.version == 0
    assert transaction.account_keys[:2] == (CUSTOMER, MERCHANT) and transaction.account_keys[5] == REFERENCE
    assert transaction.meta is not None and transaction.meta.fee == 5_050
    assert transaction.meta.post_balances[1] - transaction.meta.pre_balances[1] == 250_000_000
    transfer = transaction.instructions[3]
    assert transfer.accounts == (0, 1, 5) and transfer.data == bytes.fromhex("02000000") + (
        250_000_000
    ).to_bytes(8, "little")
    assert transaction.is_signer(0) and transaction.is_writable(0) and transaction.is_writable(1)
    assert not transaction.is_writable(5) and not transaction.is_signer(5)


def test_an_unknown_transaction_is_none(rpc: FakeRpc) -> None:
    rpc.result("getTransaction", None)

    assert solana_node(rpc).transaction(SIG1) is None


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("meta.fee", 5050.0),  # a fraction where Agave writes an integer
        ("meta.fee", -1),
        ("meta.fee", True),
        ("meta.preBalances", [9_000_000_000, 0, 1, 1, 521_498_880]),  # a balance short of the keys
        ("meta.postBalances.1", "250000000"),
        ("meta.status", {"Err": "AccountInUse"}),  # disagrees with err
        ("meta.err", ["not", "an", "error"]),
        ("transaction.signatures", []),
        ("transaction.signatures.0", "not base58 0OIl"),
        ("transaction.signatures.0", BLOCKHASH),  # 32 bytes, not 64
        ("transaction.message.accountKeys.1", CUSTOMER),  # a key twice
        ("transaction.message.instructions.3.accounts", [0, 1, 6]),  # past the keys
        ("transaction.message.instructions.3.data", "0OIl"),
        ("transaction.message.header.numRequiredSignatures", 2),
        ("transaction.message.recentBlockhash", ...),
        ("version", 1),
        ("slot", ...),
    ],
)
def test_a_transaction_not_in_agaves_shape_is_refused(rpc: FakeRpc, path: str, value: object) -> None:
    rpc.result("getTransaction", changed(SOLANA_PAY_V0, path, value))

    with pytest.raises(NodeAnswerError):
        solana_node(rpc).transaction(SIG1)


def test_the_answer_must_be_the_transaction_asked_for(rpc: FakeRpc) -> None:
    rpc.result("getTransaction", SOLANA_PAY_V0)

    with pytest.raises(NodeAnswerError, match="asked for"):
        solana_node(rpc).transaction(SIG3)


def test_signature_statuses_keep_the_order_and_the_unknown(rpc: FakeRpc) -> None:
    rpc.result("getSignatureStatuses", recorded.SIGNATURE_STATUSES)

    first, unknown, failed = solana_node(rpc).signature_statuses([SIG1, SIG1, SIG3], search_history=True)

    assert rpc.request()["params"] == [[SIG1, SIG1, SIG3], {"searchTransactionHistory": True}]
    assert first is not None and (first.confirmations, first.confirmation_status, first.finalized) == (
        12,
        "confirmed",
        False,
    )
    assert unknown is None
    assert failed is not None and failed.finalized and failed.err == {"InstructionError": [0, {"Custom": 1}]}


def test_statuses_for_other_signatures_are_refused(rpc: FakeRpc) -> None:
    rpc.result("getSignatureStatuses", recorded.SIGNATURE_STATUSES)

    with pytest.raises(NodeAnswerError, match="3 statuses for 2 signatures"):
        solana_node(rpc).signature_statuses([SIG1, SIG3])


def test_fees(rpc: FakeRpc) -> None:
    rpc.result("getFeeForMessage", {"context": recorded.CONTEXT, "value": 5_050})
    rpc.result(
        "getRecentPrioritizationFees",
        [{"prioritizationFee": 0, "slot": 341_279_700}, {"prioritizationFee": 50_000, "slot": 341_279_701}],
    )
    node = solana_node(rpc)

    assert node.fee_for_message(b"\x01\x02", commitment="confirmed") == 5_050
    assert rpc.request()["params"] == [base64.b64encode(b"\x01\x02").decode(), {"commitment": "confirmed"}]
    fees = node.recent_prioritization_fees([MERCHANT])
    assert [(f.slot, f.fee) for f in fees] == [(341_279_700, 0), (341_279_701, 50_000)]
    assert rpc.request()["params"] == [[MERCHANT]]
    rpc.result("getFeeForMessage", {"context": recorded.CONTEXT, "value": None})
    assert node.fee_for_message(b"\x01") is None


def test_send_transaction_checks_the_signature_taken(rpc: FakeRpc) -> None:
    transaction = wallet.payment(Keypair(), Keypair().pubkey(), 1, Hash.default())
    raw = bytes(transaction)
    rpc.result("sendTransaction", str(transaction.signatures[0]))
    node = solana_node(rpc)

    assert node.send_transaction(raw) == first_signature(raw) == str(transaction.signatures[0])
    assert rpc.request()["params"] == [
        base64.b64encode(raw).decode(),
        {"encoding": "base64", "skipPreflight": False, "preflightCommitment": "confirmed"},
    ]
    rpc.result("sendTransaction", SIG1)
    with pytest.raises(NodeAnswerError, match="took"):
        node.send_transaction(raw)


@pytest.mark.parametrize(
    ("body", "kind", "code"),
    [
        (recorded.preflight("BlockhashNotFound", "Blockhash not found"), errors.BlockhashNotFound, -32002),
        (
            recorded.preflight("AlreadyProcessed", "This transaction has already been processed"),
            errors.AlreadyProcessed,
            -32002,
        ),
        (
            recorded.preflight(
                {"InstructionError": [0, {"Custom": 1}]},
                "Error processing Instruction 0: custom program error: 0x1",
                ["Transfer: insufficient lamports 10, need 20"],
            ),
            errors.PreflightFailure,
            -32002,
        ),
        (
            recorded.error(-32003, "Transaction signature verification failure"),
            errors.SignatureVerificationFailure,
            -32003,
        ),
        (
            recorded.error(
                -32602, "invalid transaction: Transaction failed to sanitize accounts offsets correctly"
            ),
            errors.InvalidParams,
            -32602,
        ),
    ],
)
def test_send_errors_are_typed(rpc: FakeRpc, body: dict[str, object], kind: type, code: int) -> None:
    rpc.body("sendTransaction", body)

    with pytest.raises(kind) as raised:
        solana_node(rpc).send_transaction(_raw_transaction())

    assert isinstance(raised.value, errors.SendTransactionError) or kind is errors.InvalidParams
    assert raised.value.code == code and raised.value.method == "sendTransaction"
    if isinstance(raised.value, errors.PreflightFailure):
        assert raised.value.err == body["error"]["data"]["err"]  # type: ignore[index]


def _raw_transaction() -> bytes:
    return bytes(wallet.payment(Keypair(), Keypair().pubkey(), 1, Hash.default()))


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (recorded.error(-32005, "Node is behind by 42 slots", {"numSlotsBehind": 42}), errors.NodeBehind),
        (
            recorded.error(-32016, "Minimum context slot has not been reached", {"contextSlot": 9}),
            errors.NodeBehind,
        ),
        (recorded.error(-32603, "Internal error"), SolanaNodeUnavailable),
        (recorded.error(-32601, "Method not found"), errors.MethodNotFound),
        (recorded.error(-32602, "Invalid param: WrongSize"), errors.InvalidParams),
        (
            recorded.error(-32015, "Transaction version (0) is not supported"),
            errors.UnsupportedTransactionVersion,
        ),
        (
            recorded.error(-32011, "Transaction history is not available from this node"),
            errors.SolanaRpcError,
        ),
    ],
)
def test_errors_are_typed_by_code(rpc: FakeRpc, body: dict[str, object], kind: type) -> None:
    rpc.body("getSlot", body)

    with pytest.raises(kind):
        solana_node(rpc).slot()


@pytest.mark.parametrize(
    ("status", "body", "echo_id", "match"),
    [
        (
            429,
            {"jsonrpc": "2.0", "error": {"code": 429, "message": "Too many requests"}},
            True,
            "rate limited",
        ),
        (
            401,
            {"jsonrpc": "2.0", "error": {"code": -32401, "message": "invalid api key provided"}},
            True,
            "API key",
        ),
        (403, "Forbidden", True, "API key"),
        (502, "<html>Bad Gateway</html>", True, "HTTP 502"),
        (200, "<html>not json</html>", True, "not JSON"),
        (200, {"result": 1}, True, "not a JSON-RPC 2.0"),
        (200, [{"jsonrpc": "2.0", "result": 1, "id": 1}], True, "not a JSON-RPC 2.0"),
        (200, {"jsonrpc": "2.0", "result": 1, "id": 99}, False, "request 99"),
        (200, {"jsonrpc": "2.0", "id": 1}, True, "neither"),
        (200, {"jsonrpc": "2.0", "error": {"code": "x", "message": 1}}, True, "integer code"),
        (200, {"jsonrpc": "2.0", "result": 1.5}, True, "u64"),
        (200, {"jsonrpc": "2.0", "result": -1}, True, "u64"),
    ],
)
def test_what_is_not_a_node_answering_is_unavailable(
    rpc: FakeRpc, status: int, body: object, echo_id: bool, match: str
) -> None:
    rpc.body("getSlot", body, status=status, echo_id=echo_id)

    with pytest.raises(SolanaNodeUnavailable, match=match) as raised:
        solana_node(rpc).slot()

    assert isinstance(raised.value, ChainUnavailable)


@pytest.mark.parametrize("exc", [requests.ConnectionError("refused"), requests.Timeout("slow")])
def test_an_unreachable_node_is_unavailable(rpc: FakeRpc, exc: Exception) -> None:
    rpc.body("getSlot", exc)

    with pytest.raises(SolanaNodeUnavailable, match=type(exc).__name__):
        solana_node(rpc).slot()


def test_a_key_in_the_url_is_not_shown_in_errors(rpc: FakeRpc) -> None:
    session = requests.Session()
    session.mount("https://", rpc)
    rpc.body("getSlot", "nope", status=500)

    with pytest.raises(SolanaNodeUnavailable) as raised:
        SolanaNode("https://solana.test/rpc?api-key=SECRET", session=session).slot()

    assert "SECRET" not in str(raised.value) and "https://solana.test" in str(raised.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda node: node.balance("not an address"),
        lambda node: node.transaction("not a signature"),
        lambda node: node.slot("recent"),
        lambda node: node.signatures_for_address(MERCHANT, commitment="processed"),
        lambda node: node.signatures_for_address(MERCHANT, limit=1001),
        lambda node: node.signature_statuses([SIG1] * 257),
        lambda node: node.send_transaction(b"\x00" * 1233),
    ],
)
def test_a_bad_argument_never_reaches_the_node(rpc: FakeRpc, call: object) -> None:
    with pytest.raises(ValueError):
        call(solana_node(rpc))  # type: ignore[operator]

    assert rpc.sent == []
