"""toncenter's client: answers recorded from the devnet (recorded_devnet.json, in toncenter's v2 shapes) and
altered by hand, replayed through a fake session; then the same calls against the live devnet."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import requests
from pytoniq_core import Address

from chains.base import ChainUnavailable
from chains.ton.node import (
    API_KEY_HEADER,
    ExternalMessageRejected,
    NodeAnswerError,
    TonCenter,
    TonNodeError,
    TonNodeUnavailable,
)
from tests.ton_devnet.fixtures import TonDevnet, start_devnet

RECORDED: dict[str, Any] = json.loads((Path(__file__).parent / "recorded_devnet.json").read_text())
URL = "https://toncenter.example/api/v2"


def raw(address: str) -> str:
    parsed = Address(address)
    return f"{parsed.wc}:{parsed.hash_part.hex()}"


class FakeResponse:
    def __init__(self, status_code: int, content: bytes) -> None:
        self.status_code = status_code
        self.content = content


class FakeSession:
    """Answers every call with `answer` (a JSON value, or bytes as they are) and records the calls."""

    def __init__(self, answer: Any, status: int = 200) -> None:
        self.answer = answer
        self.status = status
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def _reply(self, method: str, url: str, **kwargs: Any) -> FakeResponse:
        self.calls.append((method, url, kwargs))
        if isinstance(self.answer, Exception):
            raise self.answer
        content = self.answer if isinstance(self.answer, bytes) else json.dumps(self.answer).encode()
        return FakeResponse(self.status, content)

    def get(self, url: str, **kwargs: Any) -> FakeResponse:
        return self._reply("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> FakeResponse:
        return self._reply("POST", url, **kwargs)


def client(answer: Any, status: int = 200, **kwargs: Any) -> tuple[TonCenter, FakeSession]:
    session = FakeSession(answer, status)
    return TonCenter(URL, session=session, **kwargs), session  # type: ignore[arg-type]


# --- recorded answers ---------------------------------------------------------------------------------


def test_recorded_transactions() -> None:
    center, session = client(RECORDED["getTransactions_house"])
    found = center.transactions(RECORDED["house"], limit=3)
    method, url, kwargs = session.calls[0]
    assert (method, url) == ("GET", f"{URL}/getTransactions")
    assert kwargs["params"] == {"address": RECORDED["house"], "limit": 3, "to_lt": 0}
    plain, commented, deployed = found
    assert commented.in_msg is not None and commented.in_msg.comment == "INV-7"
    assert commented.in_msg.value == 1_500_000_000 and commented.in_msg.source == raw(RECORDED["customer"])
    assert plain.in_msg is not None and plain.in_msg.comment is None and plain.in_msg.value == 250_000_000
    assert (
        deployed.in_msg is not None and deployed.in_msg.parsed is not None and deployed.in_msg.parsed.has_init
    )
    assert all(t.account == raw(RECORDED["house"]) for t in found)
    assert found[0].parsed.prev_lt == found[1].id.lt


def test_recorded_bounce() -> None:
    center, _ = client(RECORDED["getTransactions_customer"])
    bounce, sent = center.transactions(RECORDED["customer"], limit=2)
    assert bounce.in_msg is not None and bounce.in_msg.bounced
    assert bounce.in_msg.source == raw(RECORDED["bounced_at"])
    assert sent.in_msg is not None and sent.in_msg.source is None  # the external message of the wallet


def test_recorded_accounts_and_blocks() -> None:
    wallet = client(RECORDED["getWalletInformation"])[0].wallet_information(RECORDED["house"])
    assert wallet.wallet and wallet.wallet_type == "wallet v4 r2" and wallet.seqno == 0
    assert wallet.wallet_id == 698983191 and wallet.state == "active" and wallet.balance > 0
    nobody = client(RECORDED["getWalletInformation_uninit"])[0].wallet_information(RECORDED["bounced_at"])
    assert not nobody.wallet and nobody.seqno is None and nobody.state == "uninitialized"
    info = client(RECORDED["getAddressInformation"])[0].address_information(RECORDED["house"])
    assert info.state == "active" and info.code and info.last_transaction is not None
    master = client(RECORDED["getMasterchainInfo"])[0].masterchain_info()
    assert master.last.seqno > master.init.seqno == 0 and master.last.shard == -(2**63)
    run = client(RECORDED["runGetMethod_seqno"])[0].run_get_method(RECORDED["house"], "seqno")
    assert run.exit_code == 0 and run.number() == 0


def test_recorded_sends() -> None:
    boc = base64.b64decode(RECORDED["sendBocReturnHash_boc"])
    center, session = client(RECORDED["sendBocReturnHash"])
    sent = center.send_boc(boc)
    method, url, kwargs = session.calls[0]
    assert (method, url) == ("POST", f"{URL}/sendBocReturnHash")
    assert json.loads(kwargs["data"]) == {"boc": RECORDED["sendBocReturnHash_boc"]}
    assert base64.b64encode(sent.hash).decode() == RECORDED["sendBocReturnHash"]["result"]["hash"]
    with pytest.raises(ExternalMessageRejected) as replay:
        client(RECORDED["sendBocReturnHash_replayed"], 500)[0].send_boc(boc)
    assert replay.value.code == 500 and not isinstance(replay.value, ChainUnavailable)


def test_the_api_key_is_sent() -> None:
    center, session = client(RECORDED["getMasterchainInfo"], api_key="k3y")
    center.masterchain_info()
    assert session.calls[0][2]["headers"][API_KEY_HEADER] == "k3y"
    center, session = client(RECORDED["getMasterchainInfo"])
    center.masterchain_info()
    assert API_KEY_HEADER not in session.calls[0][2]["headers"]


# --- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (requests.ConnectionError("refused"), 200),
        (requests.Timeout("slow"), 200),
        ({"ok": False, "error": "Ratelimit exceed", "code": 429}, 429),
        (b"<html>bad gateway</html>", 502),
        (b"not json", 200),
        ({"ok": False, "error": "LITE_SERVER_NOTREADY: ...", "code": 500}, 500),
        ({"ok": False, "error": "Liteserver timeout", "code": 504}, 504),
    ],
)
def test_unreachable_or_failing_is_unavailable(answer: Any, status: int) -> None:
    with pytest.raises(TonNodeUnavailable) as caught:
        client(answer, status)[0].masterchain_info()
    assert isinstance(caught.value, ChainUnavailable)


def test_a_refusal_is_typed() -> None:
    with pytest.raises(TonNodeError) as caught:
        client(RECORDED["getAddressInformation_bad"], 416)[0].address_information("nope")
    assert caught.value.code == 416 and caught.value.error == "Incorrect address"
    assert not isinstance(caught.value, ChainUnavailable)
    with pytest.raises(TonNodeError) as key:
        client({"ok": False, "error": "API key does not exist", "code": 401}, 401)[0].masterchain_info()
    assert key.value.code == 401


def test_a_send_that_fails_otherwise_may_have_gone() -> None:
    answer = {"ok": False, "error": "LITE_SERVER_NETWORK: timeout", "code": 500}
    with pytest.raises(TonNodeUnavailable):
        client(answer, 500)[0].send_boc(b"x")


def _tampered(change: Any) -> dict[str, Any]:
    answer = copy.deepcopy(RECORDED["getTransactions_house"])
    change(answer["result"])
    return answer


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r[1]["in_msg"].update(value="1500000001"),  # the JSON says more than the bytes
        lambda r: r[1]["in_msg"].update(source=r[0]["in_msg"]["destination"]),
        lambda r: r[1].update(data=r[0]["data"]),  # another transaction's bytes
        lambda r: r[1]["transaction_id"].update(lt="1"),
        lambda r: r[1]["in_msg"]["msg_data"].update(text=base64.b64encode(b"INV-8").decode()),
        lambda r: r.reverse(),  # not newest first
        lambda r: r.pop(1),  # a gap
        lambda r: r[0].update(utime=r[0]["utime"] + 1),
        lambda r: r[0].update(fee="-1"),
        lambda r: r[0]["in_msg"].update(value=1.5),
        lambda r: r[0].pop("out_msgs"),
        lambda r: r[0]["in_msg"]["msg_data"].update({"@type": "msg.dataSomething"}),
        lambda r: r[0].update(data="!!!"),
    ],
)
def test_answers_that_contradict_themselves_are_refused(change: Any) -> None:
    with pytest.raises(NodeAnswerError):
        client(_tampered(change))[0].transactions(RECORDED["house"], limit=3)


def test_answers_not_in_toncenters_shape_are_refused() -> None:
    for answer in (
        {"result": {}},
        {"ok": True},
        {"ok": True, "result": []},
        {"ok": True, "result": {"last": {}, "init": {}}},
        [1, 2],
    ):
        with pytest.raises(NodeAnswerError):
            client(answer)[0].masterchain_info()
    with pytest.raises(NodeAnswerError):
        client({"ok": True, "result": [{}] * 4})[0].transactions(RECORDED["house"], limit=3)
    other = RECORDED["getTransactions_house"]
    with pytest.raises(NodeAnswerError):  # a page of another account
        client(other)[0].transactions(RECORDED["customer"], limit=3)


def test_arguments_are_checked_before_asking() -> None:
    center, session = client(RECORDED["getTransactions_house"])
    with pytest.raises(ValueError):
        center.transactions(RECORDED["house"], limit=0)
    with pytest.raises(ValueError):
        center.transactions(RECORDED["house"], lt=5)
    with pytest.raises(ValueError):
        TonCenter("toncenter.com/api/v2")
    assert session.calls == []


# --- the live devnet ----------------------------------------------------------------------------------


def test_paging_on_the_devnet(ton_devnet: TonDevnet, toncenter: TonCenter) -> None:
    receiver = ton_devnet.customer()
    payer = ton_devnet.customer()
    for i in range(4):
        ton_devnet.pay(payer, receiver, 1_000 + i, comment=f"INV-{i}")
    every = toncenter.transactions(receiver, limit=10)
    assert [t.in_msg.comment for t in every[:4] if t.in_msg] == ["INV-3", "INV-2", "INV-1", "INV-0"]
    page = toncenter.transactions(receiver, limit=2, lt=every[1].id.lt, hash=every[1].id.hash)
    assert [t.id for t in page] == [every[1].id, every[2].id]
    newer = toncenter.transactions(receiver, limit=10, to_lt=every[2].id.lt)
    assert [t.id for t in newer] == [every[0].id, every[1].id]
    info = toncenter.address_information(receiver)
    assert info.last_transaction == every[0].id and info.state == "active"
    assert toncenter.masterchain_info().last.seqno == info.block.seqno


def test_an_unknown_account_on_the_devnet(toncenter: TonCenter) -> None:
    nobody = Address((0, bytes(32))).to_str(is_bounceable=False)
    assert toncenter.transactions(nobody) == []
    info = toncenter.address_information(nobody)
    assert info.state == "uninitialized" and info.balance == 0 and info.last_transaction is None
    assert toncenter.seqno(nobody) == 0
    with pytest.raises(TonNodeError) as bad:
        toncenter.address_information("EQ-not-an-address")
    assert bad.value.code == 416


def test_the_devnet_is_unreachable_once_stopped() -> None:
    running = start_devnet(api_key="s3cret")
    try:
        assert TonCenter(f"{running.url}/api/v2", api_key="s3cret").masterchain_info().last.seqno >= 1
        with pytest.raises(TonNodeError) as refused:
            TonCenter(f"{running.url}/api/v2").masterchain_info()
        assert refused.value.code == 401
    finally:
        running.stop()
    with pytest.raises(TonNodeUnavailable):
        TonCenter(f"{running.url}/api/v2", api_key="s3cret").masterchain_info()
