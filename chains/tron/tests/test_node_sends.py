"""The java-tron client building, broadcasting and failing, and TronGrid, over a fake HTTP layer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from chains.base import ChainUnavailable
from chains.tron import address, proto
from chains.tron.node import (
    BroadcastError,
    DuplicateTransaction,
    TronNode,
    TronNodeError,
    TronNodeUnavailable,
)
from chains.tron.proto import Contract, DelegateResourceContract, RawData, Resource, TransferContract
from chains.tron.results import NodeAnswerError
from chains.tron.tests.fake_node import (
    OWNER,
    REF,
    TO,
    USDT,
    FakeHttp,
    signed_transfer,
    tron_node,
    vote_transaction,
)
from chains.tron.transaction import Transaction, trc20_transfer_data

# --- transactions the node builds ---------------------------------------------------------------------


def _built(parameter: proto.ContractMessage, **raw: Any) -> Callable[[Any], dict[str, Any]]:
    """What java-tron answers to a build request: the unsigned transaction (raw_data and its hex)."""

    def answer(body: Any) -> dict[str, Any]:
        built = Transaction.build(RawData(REF[0], REF[1], 1_700_000_060_000, (Contract(parameter),), **raw))
        return {"visible": False, **{k: v for k, v in built.to_json().items() if k != "visible"}}

    return answer


def test_create_transaction_is_the_transfer_asked_for(http: FakeHttp) -> None:
    http.on("wallet/createtransaction", _built(TransferContract(OWNER, TO, 7)))

    built = tron_node(http).create_transaction(OWNER, TO, 7)

    assert built.contract == TransferContract(OWNER, TO, 7) and built.signatures == ()
    assert http.body() == {
        "owner_address": address.to_hex(OWNER),
        "to_address": address.to_hex(TO),
        "amount": 7,
        "visible": False,
    }


def test_a_node_that_builds_another_transaction_is_refused(http: FakeHttp) -> None:
    http.on("wallet/createtransaction", _built(TransferContract(OWNER, OWNER, 7)))

    with pytest.raises(NodeAnswerError, match="the node built"):
        tron_node(http).create_transaction(OWNER, TO, 7)


def test_trigger_smart_contract_builds_a_trc20_transfer_with_its_fee_limit(http: FakeHttp) -> None:
    data = trc20_transfer_data(TO, 25_000_000)
    parameter = proto.TriggerSmartContract(OWNER, USDT, data=data)
    transaction = _built(parameter, fee_limit=30_000_000)
    http.on(
        "wallet/triggersmartcontract",
        lambda body: {"result": {"result": True}, "transaction": transaction(body)},
    )

    built = tron_node(http).trigger_smart_contract(OWNER, USDT, data, fee_limit=30_000_000)

    assert built.contract == parameter and built.raw.fee_limit == 30_000_000
    assert http.body()["fee_limit"] == 30_000_000 and http.body()["data"] == data.hex()
    with pytest.raises(NodeAnswerError, match="fee_limit"):
        tron_node(http).trigger_smart_contract(OWNER, USDT, data, fee_limit=40_000_000)


def test_trigger_smart_contract_refusals_carry_the_nodes_code_and_text(http: FakeHttp) -> None:
    message = b"Contract validate error : No contract or not a valid smart contract".hex()
    http.on(
        "wallet/triggersmartcontract", {"result": {"code": "CONTRACT_VALIDATE_ERROR", "message": message}}
    )

    with pytest.raises(TronNodeError) as refused:
        tron_node(http).trigger_smart_contract(OWNER, TO, b"", fee_limit=1)

    assert refused.value.code == "CONTRACT_VALIDATE_ERROR"
    assert refused.value.message == "Contract validate error : No contract or not a valid smart contract"


def test_delegate_and_undelegate_energy(http: FakeHttp) -> None:
    http.on("wallet/delegateresource", _built(DelegateResourceContract(OWNER, Resource.ENERGY, 10**9, TO)))
    http.on(
        "wallet/undelegateresource",
        _built(proto.UnDelegateResourceContract(OWNER, Resource.ENERGY, 10**9, TO)),
    )
    node = tron_node(http)

    delegated = node.delegate_resource(OWNER, TO, 10**9)
    body = http.body()
    undelegated = node.undelegate_resource(OWNER, TO, 10**9)

    assert body == {
        "owner_address": address.to_hex(OWNER),
        "receiver_address": address.to_hex(TO),
        "balance": 10**9,
        "resource": "ENERGY",
        "lock": False,
        "visible": False,
    }
    assert isinstance(delegated.contract, DelegateResourceContract)
    assert isinstance(undelegated.contract, proto.UnDelegateResourceContract)


def test_build_errors_are_the_nodes_error(http: FakeHttp) -> None:
    error = (
        "class org.tron.core.exception.ContractValidateException : "
        "Validate TransferContract error, balance is not sufficient."
    )
    http.on("wallet/createtransaction", {"Error": error})

    with pytest.raises(TronNodeError, match="balance is not sufficient") as refused:
        tron_node(http).create_transaction(OWNER, TO, 10**15)

    assert refused.value.code == "Error"


# --- broadcasting -------------------------------------------------------------------------------------


def test_broadcast_sends_the_json_form_and_returns_the_txid(http: FakeHttp) -> None:
    transfer = signed_transfer()
    http.on("wallet/broadcasttransaction", {"result": True, "txid": transfer.txid})

    assert tron_node(http).broadcast(transfer) == transfer.txid
    assert http.body() == transfer.to_json()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("SIGERROR", "Validate signature error: miss sig or contract"),
        ("TAPOS_ERROR", "Tapos check error"),
        ("TRANSACTION_EXPIRATION_ERROR", "Transaction expired"),
        ("BANDWITH_ERROR", "Validate TransferContract error, balance is not sufficient."),
        ("CONTRACT_VALIDATE_ERROR", "Validate TriggerSmartContract error, no OwnerAccount."),
    ],
)
def test_broadcast_refusals_carry_java_trons_code(http: FakeHttp, code: str, message: str) -> None:
    http.on(
        "wallet/broadcasttransaction", {"code": code, "txid": "dd" * 32, "message": message.encode().hex()}
    )

    with pytest.raises(BroadcastError) as refused:
        tron_node(http).broadcast(signed_transfer())

    assert (refused.value.code, refused.value.message) == (code, message)
    assert not isinstance(refused.value, DuplicateTransaction)


def test_a_duplicate_broadcast_is_told_apart(http: FakeHttp) -> None:
    http.on(
        "wallet/broadcasttransaction", {"code": "DUP_TRANSACTION_ERROR", "message": b"dup transaction".hex()}
    )

    with pytest.raises(DuplicateTransaction, match="dup transaction"):
        tron_node(http).broadcast(signed_transfer())


# --- TronGrid -----------------------------------------------------------------------------------------


def test_trongrid_trc20_history_for_rechecks(http: FakeHttp) -> None:
    entry = {
        "transaction_id": "ee" * 32,
        "token_info": {"symbol": "USDT", "address": USDT, "decimals": 6, "name": "Tether USD"},
        "block_timestamp": 1_700_000_000_000,
        "from": OWNER,
        "to": TO,
        "type": "Transfer",
        "value": "25000000",
    }
    http.on(
        f"v1/accounts/{TO}/transactions/trc20",
        {"data": [entry], "success": True, "meta": {"fingerprint": "f1"}},
    )

    page = tron_node(http).trc20_transfers(TO, contract=USDT, min_timestamp=5)

    request = http.sent[0][0]
    assert request.method == "GET"
    assert parse_qs(urlsplit(request.url).query) == {
        "only_to": ["true"],
        "only_confirmed": ["true"],
        "limit": ["50"],
        "contract_address": [USDT],
        "min_timestamp": ["5"],
    }
    (transfer,) = page.transfers
    assert (transfer.contract, transfer.from_address, transfer.to_address, transfer.amount) == (
        USDT,
        OWNER,
        TO,
        25_000_000,
    )
    assert page.fingerprint == "f1"


def test_a_trongrid_refusal_is_the_nodes_error(http: FakeHttp) -> None:
    http.on(
        f"v1/accounts/{TO}/transactions/trc20",
        {"success": False, "error": "Invalid address", "statusCode": 400},
        400,
    )

    with pytest.raises(TronNodeError, match="Invalid address"):
        tron_node(http).trc20_transfers(TO)


# --- when the node is not there --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "status", "reason"),
    [
        (requests.ConnectionError("refused"), 200, "ConnectionError"),
        (requests.ReadTimeout("slow"), 200, "ReadTimeout"),
        ({"Error": "too many"}, 429, "rate limited"),
        ("<html>502 Bad Gateway</html>", 502, "not JSON"),
        ({"status": 503}, 503, "HTTP 503"),
        ([1, 2], 200, "not a JSON object"),
    ],
)
def test_a_node_that_cannot_answer_is_unavailable(
    http: FakeHttp, answer: Any, status: int, reason: str
) -> None:
    http.on("wallet/getnodeinfo", answer, status)

    with pytest.raises(TronNodeUnavailable, match=reason) as unavailable:
        tron_node(http).node_info()

    assert isinstance(unavailable.value, ChainUnavailable)


@pytest.mark.parametrize(
    "answer",
    [{"block": "Num:x", "solidityBlock": ""}, {"block": 5}],
)
def test_an_answer_java_tron_would_not_write_is_refused(http: FakeHttp, answer: Any) -> None:
    http.on("wallet/getnodeinfo", answer)

    with pytest.raises(NodeAnswerError):
        tron_node(http).node_info()


def test_a_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="http"):
        TronNode("tron.test:8090")


def test_a_built_transaction_with_two_contracts_is_refused(http: FakeHttp) -> None:
    transfer = Contract(TransferContract(OWNER, TO, 7))
    built = Transaction.build(RawData(REF[0], REF[1], 1, (transfer, transfer)))
    http.on("wallet/createtransaction", built.to_json())

    with pytest.raises(NodeAnswerError, match="2 contracts") as refused:
        tron_node(http).create_transaction(OWNER, TO, 7)

    assert isinstance(
        refused.value, ChainUnavailable
    )  # a nonsense answer: the caller waits, as for an outage


def test_a_built_transaction_of_a_kind_kassa_does_not_read_is_refused(http: FakeHttp) -> None:
    http.on("wallet/createtransaction", vote_transaction())

    with pytest.raises(NodeAnswerError, match="type 4"):
        tron_node(http).create_transaction(OWNER, TO, 7)


@pytest.mark.parametrize(
    "answer",
    [{}, {"result": False}, {"result": True, "txid": "00" * 32}],
)
def test_a_broadcast_answer_that_says_nothing_sure_is_not_a_refusal(http: FakeHttp, answer: Any) -> None:
    # The same bytes are sent again later: only a code of java-tron's refuses a transaction.
    http.on("wallet/broadcasttransaction", answer)

    with pytest.raises(NodeAnswerError):
        tron_node(http).broadcast(signed_transfer())


def test_an_empty_answer_is_not_an_empty_object(http: FakeHttp) -> None:
    http.on("wallet/getblockbynum", "")

    with pytest.raises(TronNodeUnavailable, match="not JSON"):
        tron_node(http).block(5)
