"""The JSON-RPC client against a real litecoind (regtest), and how it reports a node that is not there."""

from __future__ import annotations

import http.server
import threading
from decimal import Decimal

import pytest

from chains.bitcoincore.rpc import NodeUnavailable, RpcClient, RpcError
from tests.nodes import free_port, litecoind_regtest


@pytest.fixture(scope="module")
def node():
    with litecoind_regtest() as running:
        yield running


@pytest.mark.litecoind
def test_amounts_come_and_go_as_exact_decimals(node):
    node.rpc.call("createwallet", "payouts", False, False, "", False, False)
    wallet = node.rpc.wallet("payouts")
    miner = wallet.call("getnewaddress")
    node.rpc.call("generatetoaddress", 101, miner)
    balance = wallet.call("getbalance")
    assert isinstance(balance, Decimal) and balance > 0

    receiver = wallet.call("getnewaddress")
    txid = wallet.call("sendtoaddress", receiver, Decimal("0.12345678"))
    sent = wallet.call("gettransaction", txid)
    outputs = [detail["amount"] for detail in sent["details"] if detail["category"] == "receive"]
    assert outputs == [Decimal("0.12345678")]  # exactly, never through a float


@pytest.mark.litecoind
def test_node_errors_keep_their_code(node):
    with pytest.raises(RpcError) as invalid:
        node.rpc.call("validateaddress")  # a required parameter missing
    assert invalid.value.method == "validateaddress"
    with pytest.raises(RpcError) as missing:
        node.rpc.wallet("no-such-wallet").call("getbalance")
    assert missing.value.code == -18  # wallet not found / not loaded
    with pytest.raises(RpcError) as unknown:
        node.rpc.call("no_such_method")
    assert unknown.value.code == -32601


@pytest.mark.litecoind
def test_wrong_credentials_are_an_unavailable_node_and_never_shown(node):
    wrong = node.url.replace("kassa:", "kassa:x")
    with pytest.raises(NodeUnavailable) as refused:
        RpcClient(wrong).call("getblockchaininfo")
    assert "kassa" not in str(refused.value)


def test_a_port_nobody_listens_on_is_an_unavailable_node():
    client = RpcClient(f"http://user:secret@127.0.0.1:{free_port()}")
    with pytest.raises(NodeUnavailable) as refused:
        client.call("getblockchaininfo")
    assert "secret" not in str(refused.value)


def test_an_answer_that_is_not_json_rpc_is_an_unavailable_node():
    class HtmlPage(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(502)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html>Bad gateway</html>")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), HtmlPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(NodeUnavailable, match="HTTP 502, not JSON-RPC"):
            RpcClient(f"http://u:p@127.0.0.1:{server.server_port}").call("getblockchaininfo")
    finally:
        server.shutdown()


def test_a_url_without_a_host_is_refused():
    with pytest.raises(ValueError):
        RpcClient("127.0.0.1:9332")


def _answering(body: bytes) -> http.server.HTTPServer:
    class Node(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))  # unread, it would reset the connection
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Node)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(
    ("body", "limits", "why"),
    [
        # 200 KB of brackets: the parser would recurse once per level, past the C stack of a process whose
        # recursion limit a library raised.
        (b'{"result": ' + b"[" * 200_000, {}, "nested deeper than 64 levels"),
        (
            b'{"result": "' + b"x" * 4096 + b'", "error": null, "id": 1}',
            {"max_bytes": 1024},
            "over 1024 bytes",
        ),
    ],
)
def test_an_answer_too_deep_or_too_large_is_an_unavailable_node_and_never_parsed(body, limits, why):
    from chains.answers import limited_session

    server = _answering(body)
    try:
        client = RpcClient(f"http://u:p@127.0.0.1:{server.server_port}", session=limited_session(**limits))
        with pytest.raises(NodeUnavailable) as refused:
            client.call("getblockchaininfo")
    finally:
        server.shutdown()
    assert why in repr(refused.value.__cause__)


def test_a_node_client_reads_answers_through_the_limits_by_default(settings):
    settings.CHAIN_NODES = {"eth": {"url": "http://127.0.0.1:1", "chain_id": 1}}
    from chains.answers import LimitedAdapter
    from chains.evm.node import EvmNode

    assert isinstance(RpcClient("http://u:p@127.0.0.1:1")._session.get_adapter("http://x"), LimitedAdapter)
    provider = EvmNode().w3("eth").provider
    session = provider._request_session_manager.cache_and_return_session(provider.endpoint_uri)
    assert isinstance(session.get_adapter(provider.endpoint_uri), LimitedAdapter)
