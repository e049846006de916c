"""The java-tron client reading the chain, over a fake HTTP layer answering as java-tron documents."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from chains.tron import address
from chains.tron.node import TronNode
from chains.tron.proto import TransferContract
from chains.tron.results import NodeAnswerError
from chains.tron.tests.fake_node import (
    BLOCK_ID,
    OWNER,
    TO,
    URL,
    USDT,
    FakeHttp,
    block_json,
    in_block,
    signed_transfer,
    tron_node,
    vote_transaction,
)
from chains.tron.transaction import TRANSFER_TOPIC, trc20_transfer_data, txid


def test_node_info_gives_the_head_and_the_solidifiedblock_json(http: FakeHttp) -> None:
    http.on(
        "wallet/getnodeinfo",
        {
            "beginSyncNum": 1,
            "block": f"Num:61010372,ID:{BLOCK_ID}",
            "solidityBlock": f"Num:61010353,ID:{BLOCK_ID}",
        },
    )

    info = tron_node(http, api_key="k3y").node_info()

    assert (info.head.height, info.solid.height, info.head.block_id) == (61010372, 61010353, BLOCK_ID)
    request, kwargs = http.sent[0]
    assert request.method == "POST" and http.body() == {"visible": False}
    assert request.headers["TRON-PRO-API-KEY"] == "k3y"
    assert kwargs["timeout"] == (3, 15)


def test_no_api_key_no_header(http: FakeHttp) -> None:
    http.on("wallet/getchainparameters", {"chainParameter": []})

    tron_node(http).chain_parameters()

    assert "TRON-PRO-API-KEY" not in http.sent[0][0].headers


def test_a_block_reads_the_transactions_kassa_knows_and_names_the_others(http: FakeHttp) -> None:
    transfer = signed_transfer()
    http.on("wallet/getblockbynum", block_json(70, [in_block(transfer), vote_transaction()]))

    block = tron_node(http).block(70)

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
    http.on("walletsolidity/getnowblock", block_json(50, []))
    node = TronNode(URL, solidity_url="http://tron.test:8091", session=tron_node(http)._session)

    assert node.block(51, solid=True) is None
    assert node.now_block(solid=True).height == 50
    assert urlsplit(http.sent[0][0].url).netloc == "tron.test:8091"


def test_a_block_whose_transaction_lies_about_its_bytes_is_refused(http: FakeHttp) -> None:
    lying = in_block(signed_transfer())
    lying["raw_data"]["contract"][0]["parameter"]["value"]["amount"] = 1
    http.on("wallet/getnowblock", block_json(70, [lying]))

    with pytest.raises(NodeAnswerError, match="raw_data does not say"):
        tron_node(http).now_block()


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

    (info,) = tron_node(http).transaction_infos(70)

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

    assert tron_node(http).transaction_infos(71) == []


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

    info = tron_node(http).transaction_info("aa" * 32, solid=True)

    assert info is not None and info.failed
    assert (info.receipt_result, info.energy_fee, info.net_fee) == ("OUT_OF_ENERGY", 2729100, 345000)
    assert info.message == "Not enough energy for 'SSTORE' operation executing"
    assert http.body() == {"value": "aa" * 32, "visible": False}


def test_unknown_transactions_are_none(http: FakeHttp) -> None:
    http.on("wallet/gettransactionbyid", {})
    http.on("wallet/gettransactioninfobyid", {})
    node = tron_node(http)

    assert node.transaction("bb" * 32) is None
    assert node.transaction_info("bb" * 32) is None


def test_a_transaction_read_by_id_is_read_from_its_bytes(http: FakeHttp) -> None:
    transfer = signed_transfer()
    http.on("wallet/gettransactionbyid", transfer.to_json())  # waiting: no ret yet

    found = tron_node(http).transaction(transfer.txid)

    assert found is not None and found.result == "" and found.transaction == transfer


def test_an_account_never_seen_is_not_activated(http: FakeHttp) -> None:
    http.on("wallet/getaccount", {})

    account = tron_node(http).account(TO)

    assert (account.address, account.exists, account.balance) == (TO, False, 0)
    assert http.body() == {"address": address.to_hex(TO), "visible": False}


def test_an_account_has_its_balance_in_sun(http: FakeHttp) -> None:
    http.on("wallet/getaccount", {"address": address.to_hex(TO), "balance": 1_500_000, "create_time": 1})

    assert tron_node(http).account(TO).balance == 1_500_000


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

    resource = tron_node(http).account_resource(TO)

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

    params = tron_node(http).chain_parameters()

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

    result = tron_node(http).trigger_constant(OWNER, USDT, data)

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

    result = tron_node(http).trigger_constant(OWNER, USDT, trc20_transfer_data(TO, 1))

    assert result.reverted and result.message == "REVERT opcode executed"


def test_a_transfer_kassa_cannot_read_fully_is_flagged_not_dropped(http: FakeHttp) -> None:
    # java-tron keeps fields it does not know, so this transfer can be on chain: it may be a deposit.
    body = in_block(signed_transfer())
    raw = bytes.fromhex(body["raw_data_hex"]) + bytes.fromhex("f80101")  # field 31, a varint
    body.update(raw_data_hex=raw.hex(), txID=txid(raw))
    http.on("wallet/getblockbynum", block_json(70, [body, vote_transaction()]))

    block = tron_node(http).block(70)

    assert block is not None
    unreadable, vote = block.transactions
    assert (unreadable.contract_type, unreadable.transaction) == ("TransferContract", None)
    assert "field 31" in unreadable.unreadable
    assert vote.unreadable == ""
