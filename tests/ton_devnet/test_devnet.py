"""The TON devnet over HTTP only, as a toncenter client sees it: payments with and without comments in the
receiver's getTransactions with exact nanotons, a bounce from an undeployed address, a wallet's seqno, and
external messages sent once, never twice, never late. The external messages are @ton/ton's own (the
devnet's `v4-transfer` control), so these tests do not lean on Kassa's builder (chains/ton/wallet.py)."""

from __future__ import annotations

import base64
import os
from typing import Any

from pytoniq_core import Address, Cell
from pytoniq_core.crypto.keys import mnemonic_new, mnemonic_to_private_key
from pytoniq_core.tlb.transaction import Transaction

from tests.ton_devnet.fixtures import TonDevnet, start_devnet

TON = 1_000_000_000
BOUNCED_OP = 0xFFFFFFFF
ZERO_HASH = base64.b64encode(bytes(32)).decode()


def raw(address: str) -> str:
    parsed = Address(address)
    return f"{parsed.wc}:{parsed.hash_part.hex()}"


def fresh_address(*, bounceable: bool) -> str:
    """An address no contract lives at."""
    return Address((0, os.urandom(32))).to_str(
        is_user_friendly=True, is_url_safe=True, is_bounceable=bounceable
    )


def newest(devnet: TonDevnet, address: str, limit: int = 10) -> list[dict[str, Any]]:
    return devnet.result("getTransactions", address=address, limit=limit)  # type: ignore[no-any-return]


def house(devnet: TonDevnet, balance: int = 10 * TON) -> tuple[str, bytes]:
    """A deployed house wallet v4R2 of a new seed; its address and seed."""
    seed = os.urandom(32)
    public_key = bytes.fromhex(
        devnet.v4_transfer(**_transfer_fields(seed, fresh_address(bounceable=False), 1))["public_key"]
    )
    return devnet.house_wallet(public_key, balance=balance)["address"], seed


def _transfer_fields(seed: bytes, to: str, amount: int, **extra: Any) -> dict[str, Any]:
    return {
        "seed": seed.hex(),
        "seqno": 0,
        "valid_until": 2**32 - 1,
        "to": to,
        "amount": str(amount),
        **extra,
    }


def signed(
    devnet: TonDevnet, seed: bytes, to: str, amount: int, *, seqno: int, valid_until: int, **extra: Any
) -> str:
    """@ton/ton's external message of a v4R2 transfer, base64 (as sendBocReturnHash takes it)."""
    fields = _transfer_fields(seed, to, amount, seqno=seqno, valid_until=valid_until, **extra)
    return devnet.v4_transfer(**fields)["boc"]  # type: ignore[no-any-return]


def wallet_seqno(devnet: TonDevnet, address: str) -> int:
    return devnet.result("getWalletInformation", address=address)["seqno"]  # type: ignore[no-any-return]


def balance(devnet: TonDevnet, address: str) -> int:
    return int(devnet.result("getAddressInformation", address=address)["balance"])


def parsed_transaction(item: dict[str, Any]) -> Transaction:
    return Transaction.deserialize(Cell.one_from_boc(base64.b64decode(item["data"])).begin_parse())


# --- payments in getTransactions --------------------------------------------------------------------------


def test_a_payment_with_a_comment_is_in_the_house_wallets_transactions(ton_devnet: TonDevnet) -> None:
    address, _ = house(ton_devnet)
    customer = ton_devnet.customer()
    sent = ton_devnet.pay(customer, address, 1_234_567_891, comment="INV-0042 Rechnung №42 ✓")

    [item] = newest(ton_devnet, address, limit=1)
    in_msg = item["in_msg"]
    assert item["@type"] == "ext.transaction"
    assert raw(item["address"]["account_address"]) == raw(address)
    assert item["account"].lower() == raw(address)
    assert in_msg["value"] == "1234567891"  # exact nanotons, as text
    assert raw(in_msg["source"]) == raw(customer) and raw(in_msg["destination"]) == raw(address)
    assert in_msg["source"].startswith("EQ")  # toncenter writes message addresses bounceable, URL-safe
    assert in_msg["msg_data"] == {
        "@type": "msg.dataText",
        "text": base64.b64encode("INV-0042 Rechnung №42 ✓".encode()).decode(),
    }
    assert in_msg["message"] == "INV-0042 Rechnung №42 ✓"
    # The transaction the devnet reported is the one listed, and its bytes are that transaction.
    mine = [tx for tx in sent["transactions"] if raw(tx["address"]) == raw(address)]
    assert [(tx["lt"], tx["hash"]) for tx in mine] == [
        (item["transaction_id"]["lt"], item["transaction_id"]["hash"])
    ]
    cell = Cell.one_from_boc(base64.b64decode(item["data"]))
    assert base64.b64encode(cell.hash).decode() == item["transaction_id"]["hash"]
    parsed = parsed_transaction(item)
    assert parsed.lt == int(item["transaction_id"]["lt"]) and parsed.now == item["utime"]
    assert parsed.in_msg.info.value.grams == 1_234_567_891
    assert int(item["fee"]) == int(item["storage_fee"]) + int(item["other_fee"])


def test_a_long_comment_is_read_across_cells(ton_devnet: TonDevnet) -> None:
    address, _ = house(ton_devnet)
    text = "ü" * 400  # 800 bytes: seven cells
    ton_devnet.pay(ton_devnet.customer(), address, TON, comment=text)
    [item] = newest(ton_devnet, address, limit=1)
    assert item["in_msg"]["message"] == text
    assert base64.b64decode(item["in_msg"]["msg_data"]["text"]).decode() == text


def test_a_payment_without_a_comment(ton_devnet: TonDevnet) -> None:
    address, _ = house(ton_devnet)
    ton_devnet.pay(ton_devnet.customer(), address, 500_000_001)
    [item] = newest(ton_devnet, address, limit=1)
    in_msg = item["in_msg"]
    assert in_msg["value"] == "500000001"
    assert in_msg["msg_data"]["@type"] == "msg.dataRaw"
    body = Cell.one_from_boc(base64.b64decode(in_msg["msg_data"]["body"]))
    assert len(body.bits) == 0 and not body.refs
    assert in_msg["message"] == ""
    assert in_msg["body_hash"] == base64.b64encode(body.hash).decode()


def test_an_address_with_no_transactions(ton_devnet: TonDevnet) -> None:
    nobody = fresh_address(bounceable=True)
    assert newest(ton_devnet, nobody) == []
    info = ton_devnet.result("getAddressInformation", address=nobody)
    assert info["state"] == "uninitialized" and info["balance"] == "0" and info["code"] == ""
    assert info["last_transaction_id"] == {"@type": "internal.transactionId", "lt": "0", "hash": ZERO_HASH}
    wallet = ton_devnet.result("getWalletInformation", address=nobody)
    assert wallet["wallet"] is False and wallet["account_state"] == "uninitialized" and "seqno" not in wallet


# --- bounces ----------------------------------------------------------------------------------------------


def test_a_bounceable_payment_to_an_undeployed_address_bounces_back(ton_devnet: TonDevnet) -> None:
    customer = ton_devnet.customer()
    target = fresh_address(bounceable=True)
    before = balance(ton_devnet, customer)
    sent = ton_devnet.pay(customer, target, 2 * TON)  # bounceable: the EQ form says so

    # The customer's wallet, then the target (aborted: no code), then the bounce back to the customer.
    assert [raw(tx["address"]) for tx in sent["transactions"]] == [raw(customer), raw(target), raw(customer)]
    [at_target] = newest(ton_devnet, target)
    assert at_target["in_msg"]["value"] == str(2 * TON)
    [back] = at_target["out_msgs"]
    returned = int(back["value"])
    assert raw(back["destination"]) == raw(customer)
    assert 2 * TON - TON // 100 < returned < 2 * TON  # the value back, less the fees
    assert parsed_transaction(at_target).description.aborted is True
    assert balance(ton_devnet, target) == 0
    assert ton_devnet.result("getAddressInformation", address=target)["state"] == "uninitialized"

    bounce = newest(ton_devnet, customer, limit=1)[0]
    assert raw(bounce["in_msg"]["source"]) == raw(target)
    assert bounce["in_msg"]["value"] == str(returned)
    assert bounce["in_msg"]["msg_data"]["@type"] == "msg.dataRaw"  # op 0xffffffff: not a comment
    body = Cell.one_from_boc(base64.b64decode(bounce["in_msg"]["msg_data"]["body"])).begin_parse()
    assert body.load_uint(32) == BOUNCED_OP
    info = parsed_transaction(bounce).in_msg.info
    assert info.bounced is True and info.bounce is False
    assert balance(ton_devnet, customer) < before - 2 * TON + returned  # its own fees went too


def test_a_non_bounceable_payment_to_an_undeployed_address_stays_there(ton_devnet: TonDevnet) -> None:
    customer = ton_devnet.customer()
    target = fresh_address(bounceable=False)
    sent = ton_devnet.pay(customer, target, TON, comment="to a new wallet")
    assert [raw(tx["address"]) for tx in sent["transactions"]] == [raw(customer), raw(target)]
    [item] = newest(ton_devnet, target)
    assert item["in_msg"]["message"] == "to a new wallet"
    assert parsed_transaction(item).in_msg.info.bounce is False
    assert balance(ton_devnet, target) == TON - int(item["fee"])
    assert ton_devnet.result("getAddressInformation", address=target)["state"] == "uninitialized"


def test_the_bounce_flag_can_be_forced_either_way(ton_devnet: TonDevnet) -> None:
    customer = ton_devnet.customer()
    stays = fresh_address(bounceable=True)
    sent = ton_devnet.pay(customer, stays, TON, bounce=False)
    assert len(sent["transactions"]) == 2 and balance(ton_devnet, stays) > 0


# --- the house wallet sends -------------------------------------------------------------------------------


def test_send_boc_return_hash_moves_ton_once_and_the_seqno_advances(ton_devnet: TonDevnet) -> None:
    address, seed = house(ton_devnet)
    assert wallet_seqno(ton_devnet, address) == 0
    info = ton_devnet.result("getWalletInformation", address=address)
    assert info["wallet"] is True and info["wallet_type"] == "wallet v4 r2" and info["wallet_id"] == 698983191
    payee = fresh_address(bounceable=False)
    now = ton_devnet.now()
    boc = signed(ton_devnet, seed, payee, 300_000_000, seqno=0, valid_until=now + 60, comment="payout 7")

    response = ton_devnet.api_post("sendBocReturnHash", {"boc": boc})
    answer = response.json()
    assert response.status_code == 200 and answer["ok"] is True, answer
    cell = Cell.one_from_boc(base64.b64decode(boc))
    assert answer["result"]["@type"] == "raw.extMessageInfo"
    assert answer["result"]["hash"] == base64.b64encode(cell.hash).decode()
    assert len(base64.b64decode(answer["result"]["hash_norm"])) == 32
    assert wallet_seqno(ton_devnet, address) == 1
    assert balance(ton_devnet, payee) == 300_000_000

    [sent] = newest(ton_devnet, address, limit=1)
    assert sent["in_msg"]["source"] == "" and sent["in_msg"]["hash"] == answer["result"]["hash"]
    [out] = sent["out_msgs"]
    assert (
        out["value"] == "300000000" and out["message"] == "payout 7" and raw(out["destination"]) == raw(payee)
    )

    # The same message again: refused, and nothing moves.
    again = ton_devnet.api_post("sendBocReturnHash", {"boc": boc})
    assert again.status_code == 500
    assert again.json()["ok"] is False and again.json()["code"] == 500
    assert "External message was not accepted" in again.json()["error"]
    assert "exitcode=33" in again.json()["error"]  # the wallet's "bad seqno"
    assert wallet_seqno(ton_devnet, address) == 1
    assert balance(ton_devnet, payee) == 300_000_000
    assert len(newest(ton_devnet, address)) == 2  # the deploy and the one send

    # The next seqno goes through.
    next_boc = signed(ton_devnet, seed, payee, 1, seqno=1, valid_until=ton_devnet.now() + 60)
    assert ton_devnet.api_post("sendBocReturnHash", {"boc": next_boc}).json()["ok"] is True
    assert wallet_seqno(ton_devnet, address) == 2


def test_an_expired_message_is_refused(ton_devnet: TonDevnet) -> None:
    address, seed = house(ton_devnet)
    payee = fresh_address(bounceable=False)
    past = signed(ton_devnet, seed, payee, TON, seqno=0, valid_until=ton_devnet.now() - 1)
    refused = ton_devnet.api_post("sendBocReturnHash", {"boc": past})
    assert refused.status_code == 500 and "exitcode=36" in refused.json()["error"]  # the wallet's "expired"

    soon = signed(ton_devnet, seed, payee, TON, seqno=0, valid_until=ton_devnet.now() + 30)
    ton_devnet.advance(31)
    late = ton_devnet.api_post("sendBocReturnHash", {"boc": soon})
    assert late.status_code == 500 and late.json()["ok"] is False
    assert wallet_seqno(ton_devnet, address) == 0
    assert balance(ton_devnet, payee) == 0


def test_a_message_with_a_bad_signature_is_refused(ton_devnet: TonDevnet) -> None:
    address, _ = house(ton_devnet)
    other_seed = os.urandom(32)  # not the house wallet's key: the message goes to another wallet's address
    boc = signed(
        ton_devnet,
        other_seed,
        fresh_address(bounceable=False),
        TON,
        seqno=0,
        valid_until=ton_devnet.now() + 60,
    )
    refused = ton_devnet.api_post("sendBocReturnHash", {"boc": boc})
    assert refused.status_code == 500 and refused.json()["ok"] is False
    assert wallet_seqno(ton_devnet, address) == 0


def test_a_wallet_from_a_mnemonic_is_the_one_its_key_derives(ton_devnet: TonDevnet) -> None:
    words = mnemonic_new()
    public_key, _ = mnemonic_to_private_key(words)
    made = ton_devnet.house_wallet(mnemonic=" ".join(words), balance=TON)
    assert made["public_key"] == public_key.hex()
    assert ton_devnet.house_wallet(public_key, balance=TON)["address"] == made["address"]


def test_an_uninitialized_wallet_is_deployed_by_its_first_message(ton_devnet: TonDevnet) -> None:
    seed = os.urandom(32)
    public_key = bytes.fromhex(
        ton_devnet.v4_transfer(**_transfer_fields(seed, fresh_address(bounceable=False), 1))["public_key"]
    )
    address = ton_devnet.house_wallet(public_key, balance=2 * TON, deploy=False)["address"]
    assert ton_devnet.result("getAddressInformation", address=address)["state"] == "uninitialized"
    boc = signed(
        ton_devnet,
        seed,
        fresh_address(bounceable=False),
        TON // 2,
        seqno=0,
        valid_until=ton_devnet.now() + 60,
        with_init=True,
    )
    assert ton_devnet.api_post("sendBocReturnHash", {"boc": boc}).json()["ok"] is True
    assert ton_devnet.result("getAddressInformation", address=address)["state"] == "active"
    assert wallet_seqno(ton_devnet, address) == 1


# --- blocks, pages, get methods, fees ---------------------------------------------------------------------


def test_each_batch_of_transactions_is_one_masterchain_block(ton_devnet: TonDevnet) -> None:
    start = ton_devnet.result("getMasterchainInfo")
    assert start["@type"] == "blocks.masterchainInfo" and start["init"]["seqno"] == 0
    assert start["last"]["workchain"] == -1 and start["last"]["shard"] == "-9223372036854775808"
    customer = ton_devnet.customer()
    after_customer = ton_devnet.result("getMasterchainInfo")["last"]["seqno"]
    assert after_customer == start["last"]["seqno"] + 1
    sent = ton_devnet.pay(customer, fresh_address(bounceable=True), TON)  # three transactions, one block
    assert sent["seqno"] == after_customer + 1
    assert ton_devnet.result("getMasterchainInfo")["last"]["seqno"] == sent["seqno"]
    assert ton_devnet.mine(3) == sent["seqno"] + 3


def test_transactions_are_paged_by_lt_and_hash_and_stop_at_to_lt(ton_devnet: TonDevnet) -> None:
    address, _ = house(ton_devnet)
    customer = ton_devnet.customer()
    for amount in (TON + 1, TON + 2, TON + 3):
        ton_devnet.pay(customer, address, amount)
    every = newest(ton_devnet, address, limit=10)
    assert [item["in_msg"]["value"] for item in every[:3]] == [str(TON + 3), str(TON + 2), str(TON + 1)]
    lts = [int(item["transaction_id"]["lt"]) for item in every]
    assert lts == sorted(lts, reverse=True)

    second = every[1]["transaction_id"]
    page = newest_from(ton_devnet, address, second["lt"], second["hash"], limit=2)
    assert [item["transaction_id"] for item in page] == [
        every[1]["transaction_id"],
        every[2]["transaction_id"],
    ]
    hex_hash = base64.b64decode(second["hash"]).hex()
    assert newest_from(ton_devnet, address, second["lt"], hex_hash, limit=1)[0]["transaction_id"] == second
    upto = ton_devnet.result(
        "getTransactions", address=address, limit=10, to_lt=every[2]["transaction_id"]["lt"]
    )
    assert [item["transaction_id"] for item in upto] == [
        every[0]["transaction_id"],
        every[1]["transaction_id"],
    ]
    # POST with a JSON body answers the same.
    posted = ton_devnet.api_post("getTransactions", {"address": address, "limit": 2}).json()
    assert posted["ok"] is True and posted["result"] == every[:2]


def newest_from(devnet: TonDevnet, address: str, lt: str, hash_: str, *, limit: int) -> list[dict[str, Any]]:
    return devnet.result("getTransactions", address=address, lt=lt, hash=hash_, limit=limit)  # type: ignore[no-any-return]


def test_run_get_method_and_estimate_fee(ton_devnet: TonDevnet) -> None:
    address, seed = house(ton_devnet)
    run = ton_devnet.api_post("runGetMethod", {"address": address, "method": "seqno", "stack": []}).json()
    assert run["ok"] is True
    assert run["result"]["exit_code"] == 0 and run["result"]["stack"] == [["num", "0x0"]]
    key = ton_devnet.api_post(
        "runGetMethod", {"address": address, "method": "get_public_key", "stack": []}
    ).json()
    assert int(key["result"]["stack"][0][1], 16) > 0
    nobody = ton_devnet.api_post(
        "runGetMethod", {"address": fresh_address(bounceable=True), "method": "seqno", "stack": []}
    )
    assert nobody.json()["result"]["exit_code"] == -13

    boc = signed(
        ton_devnet, seed, fresh_address(bounceable=False), TON, seqno=0, valid_until=ton_devnet.now() + 60
    )
    body = Cell.one_from_boc(base64.b64decode(boc)).begin_parse()
    body.skip_bits(2 + 2 + 3 + 8 + 256 + 4 + 1)  # ext_in_msg_info, addr_none, dest, import_fee 0, no init
    body_cell = body.load_ref() if body.load_bit() else body.to_cell()
    fee = ton_devnet.api_post(
        "estimateFee", {"address": address, "body": base64.b64encode(body_cell.to_boc()).decode()}
    ).json()
    assert fee["ok"] is True and fee["result"]["@type"] == "query.fees"
    source = fee["result"]["source_fees"]
    assert source["gas_fee"] > 0 and source["fwd_fee"] > 0 and source["in_fwd_fee"] > 0
    assert wallet_seqno(ton_devnet, address) == 0  # an estimate sends nothing


# --- the envelope ------------------------------------------------------------------------------------------


def test_errors_are_in_toncenters_envelope(ton_devnet: TonDevnet) -> None:
    bad = ton_devnet.api_get("getAddressInformation", address="not-an-address")
    assert bad.status_code == 416 and bad.json() == {"ok": False, "error": "Incorrect address", "code": 416}
    unknown = ton_devnet.api_get("noSuchMethod")
    assert unknown.status_code == 404 and unknown.json()["ok"] is False
    limit = ton_devnet.api_get("getTransactions", address=fresh_address(bounceable=True), limit=101)
    assert limit.status_code == 422 and limit.json()["code"] == 422
    ok = ton_devnet.api_get("getMasterchainInfo")
    assert ok.json()["ok"] is True and "@extra" in ok.json()
    rpc = ton_devnet.http.post(
        f"{ton_devnet.api_url}/jsonRPC",
        json={"jsonrpc": "2.0", "id": "1", "method": "getMasterchainInfo", "params": {}},
        timeout=30,
    )
    assert rpc.json()["ok"] is True and rpc.json()["id"] == "1"


def test_an_api_key_is_accepted_and_can_be_required() -> None:
    running = start_devnet(api_key="sekret")
    try:
        with_key = TonDevnet(running.url, api_key="sekret")
        assert with_key.api_get("getMasterchainInfo").json()["ok"] is True
        without = TonDevnet(running.url)
        refused = without.api_get("getMasterchainInfo")
        assert refused.status_code == 401 and refused.json()["ok"] is False
        by_query = without.api_get("getMasterchainInfo", api_key="sekret")
        assert by_query.json()["ok"] is True
    finally:
        running.stop()
