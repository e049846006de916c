"""TRX transfers over HTTP and the rules a broadcast must pass: signature, TAPOS, expiration, duplicates,
bandwidth, activation. Transactions are built by the node (createtransaction) or on the client's side
(`build_locally`), signed with the devnet's own key helper."""

from __future__ import annotations

from typing import Any

from tests.tron_devnet.encoding import raw_encode, raw_from_json
from tests.tron_devnet.fixtures import DevnetClient
from tests.tron_devnet.keys import Key

TRX = 1_000_000


def message(answer: dict[str, Any]) -> str:
    return bytes.fromhex(answer["message"]).decode()


def test_a_trx_transfer_is_mined_then_solidified_19_blocks_later(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    tx = alice.sign(tron_devnet.transfer(alice, bob.address, 5 * TRX))

    answer = tron_devnet.send(tx)
    pending = tron_devnet.info_by_id(tx["txID"])
    mined = tron_devnet.mine()

    assert answer == {"result": True, "txid": tx["txID"]}
    assert pending == {}
    info = tron_devnet.info_by_id(tx["txID"])
    assert info["blockNumber"] == mined["head"]
    assert info["receipt"]["net_usage"] > 200 and "fee" not in info  # the free 600 bytes paid for it
    assert tron_devnet.balance(bob.address) == 100_005 * TRX
    assert tron_devnet.info_by_id(tx["txID"], solidity=True) == {}
    tron_devnet.mine(18)
    assert tron_devnet.info_by_id(tx["txID"], solidity=True) == {}
    assert tron_devnet.post("wallet/getnodeinfo")["solidityBlock"].startswith(f"Num:{mined['head'] - 1},ID:")
    tron_devnet.mine(1)
    assert tron_devnet.info_by_id(tx["txID"], solidity=True) == info
    solid = tron_devnet.post("walletsolidity/getnowblock")
    assert solid["block_header"]["raw_data"]["number"] == mined["head"]
    [included] = solid["transactions"]
    assert included["txID"] == tx["txID"] and included["ret"] == [{"contractRet": "SUCCESS"}]


def test_sending_trx_to_a_new_address_pays_the_activation_fee(tron_devnet: DevnetClient) -> None:
    alice, fresh = tron_devnet.accounts["alice"], Key.from_seed("fresh")
    assert tron_devnet.post("wallet/getaccount", {"address": fresh.address, "visible": True}) == {}
    tx = alice.sign(tron_devnet.transfer(alice, fresh.address, 5 * TRX))

    tron_devnet.send(tx)
    tron_devnet.mine()

    info = tron_devnet.info_by_id(tx["txID"])
    assert info["fee"] == 1_100_000  # getCreateNewAccountFeeInSystemContract + getCreateAccountFee
    assert info["receipt"] == {"net_fee": 100_000}
    assert tron_devnet.balance(alice.address) == 100_000 * TRX - 5 * TRX - 1_100_000
    account = tron_devnet.post("wallet/getaccount", {"address": fresh.address, "visible": True})
    assert account["address"] == fresh.address and account["balance"] == 5 * TRX


def test_an_account_create_contract_activates_an_address_once_for_its_fee(tron_devnet: DevnetClient) -> None:
    alice, fresh = tron_devnet.accounts["alice"], Key.from_seed("activated")
    value = {"owner_address": alice.address, "account_address": fresh.address}
    tx = alice.sign(tron_devnet.build_locally("AccountCreateContract", value))
    assert "type" not in tx["raw_data"]["contract"][0]["parameter"]["value"]  # Normal: proto3 writes no 0

    assert tron_devnet.send(tx)["result"] is True
    tron_devnet.mine()
    again = alice.sign(tron_devnet.build_locally("AccountCreateContract", value))
    refused = tron_devnet.send(again)

    info = tron_devnet.info_by_id(tx["txID"])
    assert info["fee"] == 1_100_000  # getCreateNewAccountFeeInSystemContract + getCreateAccountFee
    assert tron_devnet.balance(alice.address) == 100_000 * TRX - 1_100_000
    account = tron_devnet.post("wallet/getaccount", {"address": fresh.address, "visible": True})
    assert account["address"] == fresh.address and "balance" not in account
    assert refused["code"] == "CONTRACT_VALIDATE_ERROR" and message(refused).endswith("Account has existed")


def test_an_account_never_activated_cannot_sign(tron_devnet: DevnetClient) -> None:
    fresh, bob = Key.from_seed("never"), tron_devnet.accounts["bob"]
    value = {"owner_address": fresh.address, "to_address": bob.address, "amount": 1}
    built = tron_devnet.transfer(fresh, bob.address, 1)

    answer = tron_devnet.send(fresh.sign(tron_devnet.build_locally("TransferContract", value)))

    assert "Error" in built and "no OwnerAccount" in built["Error"]
    assert answer["code"] == "CONTRACT_VALIDATE_ERROR"
    assert "no OwnerAccount" in message(answer)


def test_bandwidth_is_free_for_600_bytes_a_day_then_burnt_then_refused(tron_devnet: DevnetClient) -> None:
    bob, poor = tron_devnet.accounts["bob"], Key.from_seed("poor")
    tron_devnet.fund(poor.address, sun=200_000)
    tron_devnet.mine()
    first, second = (poor.sign(tron_devnet.transfer(poor, bob.address, 1)) for _ in range(2))

    answers = [tron_devnet.send(first), tron_devnet.send(second)]
    third = tron_devnet.send(poor.sign(tron_devnet.transfer(poor, bob.address, 1)))
    tron_devnet.mine()

    assert [a["result"] for a in answers] == [True, True]
    assert third["code"] == "BANDWITH_ERROR"
    assert message(third) == "Account resource insufficient error."
    resource = tron_devnet.post("wallet/getaccountresource", {"address": poor.address, "visible": True})
    assert resource["freeNetLimit"] == 600 and resource["freeNetUsed"] > 500
    alice = tron_devnet.accounts["alice"]
    for tx in (alice.sign(tron_devnet.transfer(alice, bob.address, 1)) for _ in range(3)):
        tron_devnet.send(tx)
        last = tx
    tron_devnet.mine()
    burnt = tron_devnet.info_by_id(last["txID"])
    assert burnt["receipt"]["net_fee"] == burnt["fee"] > 200 * 1_000  # getTransactionFee sun a byte
    assert "net_usage" not in burnt["receipt"]


def test_a_signature_by_another_key_is_a_sigerror(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    tx = tron_devnet.transfer(alice, bob.address, TRX)

    wrong_key = tron_devnet.send(bob.sign(tx))
    unsigned = tron_devnet.send(tx)
    garbage = tron_devnet.send(dict(tx, signature=["00" * 65]))

    assert wrong_key["code"] == unsigned["code"] == garbage["code"] == "SIGERROR"
    assert wrong_key["txid"] == tx["txID"]
    assert message(wrong_key).startswith("Validate signature error")
    assert tron_devnet.send(alice.sign(tx))["result"] is True


def test_raw_data_hex_is_authoritative_and_the_json_must_match_it(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    signed = alice.sign(tron_devnet.transfer(alice, bob.address, TRX))
    raw_data = dict(signed["raw_data"], expiration=signed["raw_data"]["expiration"] + 1)
    tampered_hex = raw_encode(raw_from_json(raw_data)).hex()

    mismatch = tron_devnet.send(dict(signed, raw_data=raw_data))
    tampered = tron_devnet.send({"raw_data_hex": tampered_hex, "signature": signed["signature"]})

    assert "raw_data does not match raw_data_hex" in mismatch["Error"]
    assert tampered["code"] == "SIGERROR"  # another txid: the signature recovers to someone else


def test_a_duplicate_is_refused_pending_and_mined(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    tx = alice.sign(tron_devnet.transfer(alice, bob.address, TRX))
    tron_devnet.send(tx)

    pending = tron_devnet.send(tx)
    tron_devnet.mine()
    mined = tron_devnet.send(tx)

    assert pending["code"] == mined["code"] == "DUP_TRANSACTION_ERROR"
    assert message(mined) == "dup transaction"


def test_a_transaction_past_its_expiration_is_refused(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    tx = alice.sign(tron_devnet.transfer(alice, bob.address, TRX))
    head = tron_devnet.post("wallet/getnowblock")["block_header"]["raw_data"]["timestamp"]
    assert tx["raw_data"]["expiration"] == head + 60_000

    tron_devnet.mine(20)  # 60 s on the devnet's clock
    answer = tron_devnet.send(tx)

    assert answer["code"] == "TRANSACTION_EXPIRATION_ERROR"
    assert "expiration" in message(answer)


def test_an_expiration_more_than_a_day_ahead_is_refused(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    head = tron_devnet.post("wallet/getnowblock")
    time = head["block_header"]["raw_data"]["timestamp"]
    value = {"owner_address": alice.address, "to_address": bob.address, "amount": 1}

    too_far = tron_devnet.send(
        alice.sign(tron_devnet.build_locally("TransferContract", value, expiration=time + 86_400_001))
    )
    a_day = tron_devnet.send(
        alice.sign(tron_devnet.build_locally("TransferContract", value, expiration=time + 86_400_000))
    )

    assert too_far["code"] == "TRANSACTION_EXPIRATION_ERROR"
    assert a_day["result"] is True


def test_tapos_must_name_a_block_of_this_chain(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    tron_devnet.mine(3)
    head = tron_devnet.post("wallet/getnowblock")
    older = tron_devnet.post("wallet/getblockbynum", {"num": 1})
    forged = dict(head, blockID=head["blockID"][:16] + "ff" * 24)
    value = {"owner_address": alice.address, "to_address": bob.address, "amount": 1}

    wrong = tron_devnet.send(alice.sign(tron_devnet.build_locally("TransferContract", value, ref=forged)))
    recent = tron_devnet.send(alice.sign(tron_devnet.build_locally("TransferContract", value, ref=older)))

    assert wrong["code"] == "TAPOS_ERROR"
    assert recent["result"] is True


def test_a_memo_is_carried_in_raw_data_and_costs_the_memo_fee(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    tx = alice.sign(tron_devnet.transfer(alice, bob.address, TRX, extra_data="INV-0001"))

    tron_devnet.send(tx)
    tron_devnet.mine()

    assert bytes.fromhex(tx["raw_data"]["data"]) == b"INV-0001"
    block = tron_devnet.post("wallet/getblockbynum", {"num": 1})
    assert block["transactions"][0]["raw_data"]["data"] == b"INV-0001".hex()
    assert tron_devnet.info_by_id(tx["txID"])["fee"] == 1_000_000  # getMemoFee
