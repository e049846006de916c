"""The java-tron client over a fake HTTP layer answering as java-tron documents its HTTP API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from requests.adapters import BaseAdapter

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
from chains.tron.transaction import TRANSFER_TOPIC, Transaction, single, trc20_transfer_data, txid

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


@pytest.fixture
def http() -> FakeHttp:
    return FakeHttp()


def _node(http: FakeHttp, **options: Any) -> TronNode:
    session = requests.Session()
    session.mount("http://", http)
    return TronNode(URL, session=session, **options)


def _signed_transfer(amount: int = 5_000_000) -> Transaction:
    raw = single(
        TransferContract(OWNER, TO, amount), ref_block=REF, expiration=1_700_000_060_000, timestamp=1
    )
    return Transaction.build(raw).signed(KEY)


def _in_block(transaction: Transaction, result: str = "SUCCESS") -> dict[str, Any]:
    return {"ret": [{"contractRet": result}], **transaction.to_json()}


def _vote_transaction() -> dict[str, Any]:
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


def _block(height: int, transactions: list[dict[str, Any]]) -> dict[str, Any]:
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


# --- reading ----------------------------------------------------------------------------------------------


def test_node_info_gives_the_head_and_the_solidified_block(http: FakeHttp) -> None:
    http.on(
        "wallet/getnodeinfo",
        {
            "beginSyncNum": 1,
            "block": f"Num:61010372,ID:{BLOCK_ID}",
            "solidityBlock": f"Num:61010353,ID:{BLOCK_ID}",
        },
    )

    info = _node(http, api_key="k3y").node_info()

    assert (info.head.height, info.solid.height, info.head.block_id) == (61010372, 61010353, BLOCK_ID)
    request, kwargs = http.sent[0]
    assert request.method == "POST" and http.body() == {"visible": False}
    assert request.headers["TRON-PRO-API-KEY"] == "k3y"
    assert kwargs["timeout"] == (3, 15)


def test_no_api_key_no_header(http: FakeHttp) -> None:
    http.on("wallet/getchainparameters", {"chainParameter": []})

    _node(http).chain_parameters()

    assert "TRON-PRO-API-KEY" not in http.sent[0][0].headers


def test_a_block_reads_the_transactions_kassa_knows_and_names_the_others(http: FakeHttp) -> None:
    transfer = _signed_transfer()
    http.on("wallet/getblockbynum", _block(70, [_in_block(transfer), _vote_transaction()]))

    block = _node(http).block(70)

    assert block is not None and http.body() == {"num": 70, "visible": False}
    assert (block.height, block.parent_id[:16], block.timestamp) == (70, f"{69:016x}", 1_700_000_000_000)
    known, other = block.transactions
    assert (known.txid, known.contract_type, known.result) == (transfer.txid, "TransferContract", "SUCCESS")
    assert known.transaction is not None and known.transaction.contract == TransferContract(
        OWNER, TO, 5_000_000
    )
    assert (other.contract_type, other.transaction) == ("VoteWitnessContract", None)


def test_a_block_above_the_head_is_none_and_solid_reads_go_to_walletsolidity(http: FakeHttp) -> None:
    http.on("walletsolidity/getblockbynum", {})
    http.on("walletsolidity/getnowblock", _block(50, []))
    node = TronNode(URL, solidity_url="http://tron.test:8091", session=_node(http)._session)

    assert node.block(51, solid=True) is None
    assert node.now_block(solid=True).height == 50
    assert urlsplit(http.sent[0][0].url).netloc == "tron.test:8091"


def test_a_block_whose_transaction_lies_about_its_bytes_is_refused(http: FakeHttp) -> None:
    lying = _in_block(_signed_transfer())
    lying["raw_data"]["contract"][0]["parameter"]["value"]["amount"] = 1
    http.on("wallet/getnowblock", _block(70, [lying]))

    with pytest.raises(NodeAnswerError, match="raw_data does not say"):
        _node(http).now_block()


def _info(**fields: Any) -> dict[str, Any]:
    return {
        "id": "aa" * 32,
        "fee": 345000,
        "blockNumber": 70,
        "blockTimeStamp": 1_700_000_000_000,
        "contractResult": [""],
        "contract_address": "41" + address.to_evm(USDT)[2:],
        "receipt": {"energy_usage_total": 31895, "net_usage": 345, "result": "SUCCESS"},
        **fields,
    }


TRANSFER_LOG = {
    "address": address.to_evm(USDT)[2:],
    "topics": [TRANSFER_TOPIC, "00" * 12 + address.to_evm(OWNER)[2:], "00" * 12 + address.to_evm(TO)[2:]],
    "data": f"{25_000_000:064x}",
}


def test_block_receipts_give_the_trc20_transfers_with_their_log_index(http: FakeHttp) -> None:
    approval = {
        **TRANSFER_LOG,
        "topics": ["8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925"],
    }
    http.on("wallet/gettransactioninfobyblocknum", [_info(log=[approval, TRANSFER_LOG])])

    (info,) = _node(http).transaction_infos(70)

    ((index, transfer),) = info.trc20_transfers()
    assert index == 1
    assert (transfer.contract, transfer.from_address, transfer.to_address, transfer.amount) == (
        USDT,
        OWNER,
        TO,
        25_000_000,
    )
    assert (info.receipt_result, info.energy_usage_total, info.net_usage, info.failed) == (
        "SUCCESS",
        31895,
        345,
        False,
    )


@pytest.mark.parametrize("empty", [[], {}])
def test_a_block_without_transactions_has_no_receipts(http: FakeHttp, empty: Any) -> None:
    http.on("wallet/gettransactioninfobyblocknum", empty)

    assert _node(http).transaction_infos(71) == []


def test_a_failed_transaction_says_why(http: FakeHttp) -> None:
    failed = _info(
        result="FAILED",
        resMessage=b"Not enough energy for 'SSTORE' operation executing".hex(),
        receipt={
            "energy_fee": 2729100,
            "energy_usage_total": 27291,
            "net_fee": 345000,
            "result": "OUT_OF_ENERGY",
        },
    )
    http.on("walletsolidity/gettransactioninfobyid", failed)

    info = _node(http).transaction_info("aa" * 32, solid=True)

    assert info is not None and info.failed
    assert (info.receipt_result, info.energy_fee, info.net_fee) == ("OUT_OF_ENERGY", 2729100, 345000)
    assert info.message == "Not enough energy for 'SSTORE' operation executing"
    assert http.body() == {"value": "aa" * 32, "visible": False}


def test_unknown_transactions_are_none(http: FakeHttp) -> None:
    http.on("wallet/gettransactionbyid", {})
    http.on("wallet/gettransactioninfobyid", {})
    node = _node(http)

    assert node.transaction("bb" * 32) is None
    assert node.transaction_info("bb" * 32) is None


def test_a_transaction_read_by_id_is_read_from_its_bytes(http: FakeHttp) -> None:
    transfer = _signed_transfer()
    http.on("wallet/gettransactionbyid", transfer.to_json())  # waiting: no ret yet

    found = _node(http).transaction(transfer.txid)

    assert found is not None and found.result == "" and found.transaction == transfer


def test_an_account_never_seen_is_not_activated(http: FakeHttp) -> None:
    http.on("wallet/getaccount", {})

    account = _node(http).account(TO)

    assert (account.address, account.exists, account.balance) == (TO, False, 0)
    assert http.body() == {"address": address.to_hex(TO), "visible": False}


def test_an_account_has_its_balance_in_sun(http: FakeHttp) -> None:
    http.on("wallet/getaccount", {"address": address.to_hex(TO), "balance": 1_500_000, "create_time": 1})

    assert _node(http).account(TO).balance == 1_500_000


def test_account_resources_and_what_is_left(http: FakeHttp) -> None:
    http.on(
        "wallet/getaccountresource",
        {
            "freeNetUsed": 100,
            "freeNetLimit": 600,
            "NetLimit": 1000,
            "NetUsed": 1500,
            "EnergyLimit": 65000,
            "EnergyUsed": 5000,
            "TotalEnergyLimit": 90000000000,
        },
    )

    resource = _node(http).account_resource(TO)

    assert (resource.energy_left, resource.bandwidth_left) == (60000, 500)


def test_chain_parameters_by_name_and_missing_values_are_zero(http: FakeHttp) -> None:
    http.on(
        "wallet/getchainparameters",
        {
            "chainParameter": [
                {"key": "getEnergyFee", "value": 210},
                {"key": "getTransactionFee", "value": 1000},
                {"key": "getCreateAccountFee", "value": 100000},
                {"key": "getCreateNewAccountFeeInSystemContract", "value": 1000000},
                {"key": "getAllowUpdateAccountName"},
            ]
        },
    )

    params = _node(http).chain_parameters()

    assert (params.energy_fee, params.transaction_fee, params.create_account_fee) == (210, 1000, 100000)
    assert params.create_account_fee_in_system_contract == 1000000
    assert params["getAllowUpdateAccountName"] == 0
    with pytest.raises(KeyError, match="getMemoFee"):
        params["getMemoFee"]


def test_a_constant_call_estimates_energy(http: FakeHttp) -> None:
    http.on(
        "wallet/triggerconstantcontract",
        {
            "result": {"result": True},
            "energy_used": 14650,
            "constant_result": ["00" * 31 + "01"],
            "transaction": {"ret": [{}], "txID": "cc" * 32},
        },
    )
    data = trc20_transfer_data(TO, 1)

    result = _node(http).trigger_constant(OWNER, USDT, data)

    assert (result.energy_used, result.results, result.reverted) == (14650, (bytes(31) + b"\x01",), False)
    assert http.body() == {
        "owner_address": address.to_hex(OWNER),
        "contract_address": address.to_hex(USDT),
        "data": data.hex(),
        "visible": False,
    }


def test_a_reverted_constant_call_says_so(http: FakeHttp) -> None:
    http.on(
        "wallet/triggerconstantcontract",
        {
            "result": {"result": True, "message": b"REVERT opcode executed".hex()},
            "energy_used": 500,
            "constant_result": [""],
            "transaction": {"ret": [{"ret": "FAILED"}]},
        },
    )

    result = _node(http).trigger_constant(OWNER, USDT, trc20_transfer_data(TO, 1))

    assert result.reverted and result.message == "REVERT opcode executed"


# --- transactions the node builds ---------------------------------------------------------------------


def _built(parameter: proto.ContractMessage, **raw: Any) -> Callable[[Any], dict[str, Any]]:
    """What java-tron answers to a build request: the unsigned transaction (raw_data and its hex)."""

    def answer(body: Any) -> dict[str, Any]:
        built = Transaction.build(RawData(REF[0], REF[1], 1_700_000_060_000, (Contract(parameter),), **raw))
        return {"visible": False, **{k: v for k, v in built.to_json().items() if k != "visible"}}

    return answer


def test_create_transaction_is_the_transfer_asked_for(http: FakeHttp) -> None:
    http.on("wallet/createtransaction", _built(TransferContract(OWNER, TO, 7)))

    built = _node(http).create_transaction(OWNER, TO, 7)

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
        _node(http).create_transaction(OWNER, TO, 7)


def test_trigger_smart_contract_builds_a_trc20_transfer_with_its_fee_limit(http: FakeHttp) -> None:
    data = trc20_transfer_data(TO, 25_000_000)
    parameter = proto.TriggerSmartContract(OWNER, USDT, data=data)
    transaction = _built(parameter, fee_limit=30_000_000)
    http.on(
        "wallet/triggersmartcontract",
        lambda body: {"result": {"result": True}, "transaction": transaction(body)},
    )

    built = _node(http).trigger_smart_contract(OWNER, USDT, data, fee_limit=30_000_000)

    assert built.contract == parameter and built.raw.fee_limit == 30_000_000
    assert http.body()["fee_limit"] == 30_000_000 and http.body()["data"] == data.hex()
    with pytest.raises(NodeAnswerError, match="fee_limit"):
        _node(http).trigger_smart_contract(OWNER, USDT, data, fee_limit=40_000_000)


def test_trigger_smart_contract_refusals_carry_the_nodes_code_and_text(http: FakeHttp) -> None:
    message = b"Contract validate error : No contract or not a valid smart contract".hex()
    http.on(
        "wallet/triggersmartcontract", {"result": {"code": "CONTRACT_VALIDATE_ERROR", "message": message}}
    )

    with pytest.raises(TronNodeError) as refused:
        _node(http).trigger_smart_contract(OWNER, TO, b"", fee_limit=1)

    assert refused.value.code == "CONTRACT_VALIDATE_ERROR"
    assert refused.value.message == "Contract validate error : No contract or not a valid smart contract"


def test_delegate_and_undelegate_energy(http: FakeHttp) -> None:
    http.on("wallet/delegateresource", _built(DelegateResourceContract(OWNER, Resource.ENERGY, 10**9, TO)))
    http.on(
        "wallet/undelegateresource",
        _built(proto.UnDelegateResourceContract(OWNER, Resource.ENERGY, 10**9, TO)),
    )
    node = _node(http)

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
        _node(http).create_transaction(OWNER, TO, 10**15)

    assert refused.value.code == "Error"


# --- broadcasting -------------------------------------------------------------------------------------


def test_broadcast_sends_the_json_form_and_returns_the_txid(http: FakeHttp) -> None:
    transfer = _signed_transfer()
    http.on("wallet/broadcasttransaction", {"result": True, "txid": transfer.txid})

    assert _node(http).broadcast(transfer) == transfer.txid
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
        _node(http).broadcast(_signed_transfer())

    assert (refused.value.code, refused.value.message) == (code, message)
    assert not isinstance(refused.value, DuplicateTransaction)


def test_a_duplicate_broadcast_is_told_apart(http: FakeHttp) -> None:
    http.on(
        "wallet/broadcasttransaction", {"code": "DUP_TRANSACTION_ERROR", "message": b"dup transaction".hex()}
    )

    with pytest.raises(DuplicateTransaction, match="dup transaction"):
        _node(http).broadcast(_signed_transfer())


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

    page = _node(http).trc20_transfers(TO, contract=USDT, min_timestamp=5)

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
        _node(http).trc20_transfers(TO)


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
        _node(http).node_info()

    assert isinstance(unavailable.value, ChainUnavailable)


@pytest.mark.parametrize(
    "answer",
    [{"block": "Num:x", "solidityBlock": ""}, {"block": 5}],
)
def test_an_answer_java_tron_would_not_write_is_refused(http: FakeHttp, answer: Any) -> None:
    http.on("wallet/getnodeinfo", answer)

    with pytest.raises(NodeAnswerError):
        _node(http).node_info()


def test_a_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="http"):
        TronNode("tron.test:8090")


def test_a_built_transaction_with_two_contracts_is_refused(http: FakeHttp) -> None:
    transfer = Contract(TransferContract(OWNER, TO, 7))
    built = Transaction.build(RawData(REF[0], REF[1], 1, (transfer, transfer)))
    http.on("wallet/createtransaction", built.to_json())

    with pytest.raises(NodeAnswerError, match="2 contracts") as refused:
        _node(http).create_transaction(OWNER, TO, 7)

    assert isinstance(
        refused.value, ChainUnavailable
    )  # a nonsense answer: the caller waits, as for an outage


def test_a_built_transaction_of_a_kind_kassa_does_not_read_is_refused(http: FakeHttp) -> None:
    http.on("wallet/createtransaction", _vote_transaction())

    with pytest.raises(NodeAnswerError, match="type 4"):
        _node(http).create_transaction(OWNER, TO, 7)
