"""The TRON signer reads the bytes it is asked to sign and signs only what matches the stated purpose: a
processing withdrawal's stored plan from the hot address, a sweep of its own deposit address to the hot
address, a delegation, activation or capped top-up of its own deposit address. Signatures recover to the
seed's addresses, and the devnet mines what it signed."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from decimal import Decimal

import pytest
from bip_utils import Bip32Secp256k1, Bip39MnemonicGenerator, Bip39SeedGenerator

from chains.base import PayoutRefused, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC, derive_address, derive_internal_address
from chains.evm.signer import serve
from chains.signers import SeedMismatch, SeedSigner
from chains.tron import address
from chains.tron.policy import SignRefused, TronRules, signing_request
from chains.tron.proto import (
    AccountCreateContract,
    ContractMessage,
    DelegateResourceContract,
    RawData,
    Resource,
    TransferContract,
    TriggerSmartContract,
    UnDelegateResourceContract,
    encode_raw,
)
from chains.tron.signer import TronJournal, TronSigner, TronSocketSigner
from chains.tron.transaction import Transaction, recover_signer, single, tapos, trc20_transfer_data
from tests.chain import fund
from tests.factories import CompanyFactory
from tests.tron_devnet.fixtures import tron_devnet  # noqa: F401
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

TRX = 1_000_000
TOKEN = address.from_evm("0x" + "a1" * 20)
OTHER_TOKEN = address.from_evm("0x" + "b2" * 20)
PAYEE = address.from_evm("0x" + "c3" * 20)
ATTACKER = address.from_evm("0x" + "66" * 20)
HOT = derive_internal_address("tron", 0)


def deposit(index: int) -> str:
    return derive_address("trx", index)[0]


def rules(token: str = TOKEN, **changes) -> dict[str, TronRules]:
    usdt = TronRules(
        code="trc20usdt",
        contract=token,
        fee_limit_cap=100 * TRX,
        topup_cap=Decimal(30),
        topup_daily_limit=Decimal(50),
    )
    trx = replace(usdt, code="trx", contract=None)
    return {"trc20usdt": replace(usdt, **changes), "trx": replace(trx, **changes)}


def signer(journal: TronJournal | None = None, **changes) -> TronSigner:
    table = rules(**changes)
    return TronSigner(DEVELOPMENT_MNEMONIC, journal, rules=table.__getitem__, gone=lambda code, txid: True)


def now_ms() -> int:
    return int(time.time() * 1000)


def raw(message: ContractMessage, *, fee_limit: int = 0, expires_in: int = 60_000, **extra) -> RawData:
    ref = (b"\x12\x34", bytes(range(8)))
    return single(message, ref_block=ref, expiration=now_ms() + expires_in, fee_limit=fee_limit, **extra)


def request(code: str, purpose: str, data: RawData | bytes, **where) -> UnsignedTx:
    raw_bytes = data if isinstance(data, bytes) else encode_raw(data)
    payload = signing_request(purpose, raw_bytes, **where)
    return UnsignedTx(code=code, payload=payload, payments=(), fee=Decimal(0))


def token_transfer(owner: str, to: str, amount: Decimal, *, token: str = TOKEN) -> TriggerSmartContract:
    return TriggerSmartContract(owner, token, trc20_transfer_data(to, int(amount * 10**6)))


@pytest.fixture
def withdrawal(db):
    company = CompanyFactory()
    fund(company, "trc20usdt", "100")
    [accepted] = withdrawal_request(
        company=company,
        items=[WithdrawalItem(asset="trc20usdt", amount=Decimal("12.5"), to=PAYEE, tag="")],
    )
    return accepted


def payout(withdrawal, message: ContractMessage, **options) -> UnsignedTx:
    data = raw(message, fee_limit=options.pop("fee_limit", 30 * TRX), **options)
    return request("trc20usdt", "payout", data, ref=withdrawal.reference)


# --- payouts ------------------------------------------------------------------------------------------


def test_the_stored_payout_is_signed_by_the_hot_key_and_recovers_to_it(withdrawal):
    unsigned = payout(withdrawal, token_transfer(HOT, PAYEE, Decimal("12.5")))

    signed = signer().sign(unsigned)

    transaction = Transaction.from_json(json.loads(signed.raw))
    assert signed.sender == HOT and signed.nonce is None
    assert signed.txid == transaction.txid and signed.fee == Decimal(30)
    assert transaction.signers() == [HOT]
    assert recover_signer(signed.txid, transaction.signatures[0]) == HOT


@pytest.mark.parametrize(
    ("message", "options", "refusal"),
    [
        (token_transfer(HOT, ATTACKER, Decimal("12.5")), {}, "not the payout of withdrawal"),
        (token_transfer(HOT, PAYEE, Decimal("125")), {}, "not the payout of withdrawal"),
        (token_transfer(HOT, PAYEE, Decimal("12.5"), token=OTHER_TOKEN), {}, "not the payout"),
        (TransferContract(HOT, PAYEE, 12_500_000), {}, "not the payout of withdrawal"),
        (token_transfer(deposit(0), PAYEE, Decimal("12.5")), {}, "not the payout of withdrawal"),
        (token_transfer(HOT, PAYEE, Decimal("12.5")), {"fee_limit": 101 * TRX}, "over the cap"),
        (token_transfer(HOT, PAYEE, Decimal("12.5")), {"expires_in": -1_000}, "expired"),
        (token_transfer(HOT, PAYEE, Decimal("12.5")), {"expires_in": 25 * 3600_000}, "more than 24 h"),
        (token_transfer(HOT, PAYEE, Decimal("12.5")), {"data": b"memo"}, "no memo"),
    ],
    ids=[
        "another recipient",
        "another amount",
        "another token contract",
        "trx instead of the token",
        "from a deposit address",
        "fee_limit over the cap",
        "expired",
        "expiring beyond 24 h",
        "with a memo",
    ],
)
def test_a_payout_unlike_the_stored_plan_is_refused(withdrawal, message, options, refusal):
    unsigned = payout(withdrawal, message, **options)

    with pytest.raises(SignRefused, match=refusal):
        signer().sign(unsigned)


def test_a_payout_of_no_processing_withdrawal_is_refused(withdrawal):
    honest = payout(withdrawal, token_transfer(HOT, PAYEE, Decimal("12.5")))
    elsewhere = request("trc20usdt", "payout", raw(token_transfer(HOT, PAYEE, Decimal("12.5"))), ref="x")
    from withdrawals.services import withdrawal_reject

    with pytest.raises(SignRefused, match="no withdrawal 'x'"):
        signer().sign(elsewhere)
    withdrawal_reject(uid=withdrawal.uid, reason="test")
    with pytest.raises(SignRefused, match="not processing"):
        signer().sign(honest)


@pytest.mark.parametrize(
    ("bytes_", "refusal"),
    [
        (bytes(32), "cannot be read fully"),  # a bare hash: never signed
        (b"", "raw_data_hex"),
        (b"\x0a\x02\x12", "cannot be read fully"),
    ],
    ids=["a bare hash", "nothing", "truncated bytes"],
)
def test_bytes_the_decoder_cannot_read_are_refused(withdrawal, bytes_, refusal):
    unsigned = request("trc20usdt", "payout", bytes_, ref=withdrawal.reference)

    with pytest.raises(SignRefused, match=refusal):
        signer().sign(unsigned)


def test_an_unknown_field_after_an_honest_payout_is_refused(withdrawal):
    honest = encode_raw(raw(token_transfer(HOT, PAYEE, Decimal("12.5")), fee_limit=TRX))
    unsigned = request("trc20usdt", "payout", honest + b"\xa0\x01\x01", ref=withdrawal.reference)

    with pytest.raises(SignRefused, match="cannot be read fully"):
        signer().sign(unsigned)


def test_a_withdrawal_is_signed_as_one_transaction_until_that_one_expired_unmined(withdrawal, tmp_path):
    journal = str(tmp_path / "journal.sqlite3")
    first = payout(withdrawal, token_transfer(HOT, PAYEE, Decimal("12.5")))
    other = payout(withdrawal, token_transfer(HOT, PAYEE, Decimal("12.5")), expires_in=90_000)
    later = payout(withdrawal, token_transfer(HOT, PAYEE, Decimal("12.5")), expires_in=3 * 3600_000)

    def two_hours_on(gone: bool) -> TronSigner:
        return TronSigner(
            DEVELOPMENT_MNEMONIC,
            TronJournal(journal),
            rules=rules().__getitem__,
            gone=lambda code, txid: gone,
            clock=lambda: now_ms() + 2 * 3600_000,
        )

    signed = signer(TronJournal(journal)).sign(first)

    assert signer(TronJournal(journal)).sign(first) == signed  # the same bytes: the same signature
    with pytest.raises(SignRefused, match="may be mined until it expires"):
        signer(TronJournal(journal)).sign(other)  # a restarted signer: the journal is its file
    with pytest.raises(SignRefused, match="which the node knows"):
        two_hours_on(gone=False).sign(later)
    assert two_hours_on(gone=True).sign(later).txid != signed.txid  # expired and never mined


def test_payouts_beyond_the_daily_limit_are_refused(withdrawal):
    table = rules(daily_limit=Decimal(20))
    limited = TronSigner(DEVELOPMENT_MNEMONIC, rules=table.__getitem__)
    limited.sign(payout(withdrawal, token_transfer(HOT, PAYEE, Decimal("12.5"))))
    second = withdrawal_request(
        company=withdrawal.company,
        items=[WithdrawalItem(asset="trc20usdt", amount=Decimal("12.5"), to=PAYEE, tag="")],
    )[0]

    with pytest.raises(SignRefused, match=r"25 trc20usdt today is over the daily limit 20"):
        limited.sign(payout(second, token_transfer(HOT, PAYEE, Decimal("12.5"))))


# --- sweeps, delegations, top-ups ---------------------------------------------------------------------


def test_a_sweep_of_its_own_deposit_address_to_the_hot_address_is_signed_by_that_address():
    sweep = request("trc20usdt", "sweep", raw(token_transfer(deposit(4), HOT, Decimal(7))), index=4)
    trx = request("trx", "sweep", raw(TransferContract(deposit(5), HOT, 3 * TRX)), index=5)

    signed, native = signer().sign(sweep), signer().sign(trx)

    assert signed.sender == deposit(4) and native.sender == deposit(5)
    transaction = Transaction.from_json(json.loads(signed.raw))
    assert transaction.signers() == [deposit(4)]


@pytest.mark.parametrize(
    ("code", "message", "index", "refusal"),
    [
        ("trc20usdt", token_transfer(deposit(4), HOT, Decimal(7)), 5, "not a sweep"),
        ("trc20usdt", token_transfer(ATTACKER, HOT, Decimal(7)), 4, "not a sweep"),
        ("trc20usdt", token_transfer(deposit(4), ATTACKER, Decimal(7)), 4, "to the hot address only"),
        ("trc20usdt", token_transfer(deposit(4), HOT, Decimal(7), token=OTHER_TOKEN), 4, "not a sweep"),
        ("trc20usdt", TransferContract(deposit(4), HOT, TRX), 4, "to the hot address only"),
        ("trx", TransferContract(deposit(4), ATTACKER, TRX), 4, "not a sweep"),
        ("trx", TransferContract(deposit(4), HOT, TRX), -1, "deposit index"),
    ],
    ids=[
        "another index",
        "an address it did not derive",
        "to a foreign address",
        "another token",
        "trx under the token's code",
        "trx to a foreign address",
        "no index",
    ],
)
def test_a_sweep_not_from_its_own_address_to_the_hot_address_is_refused(code, message, index, refusal):
    unsigned = request(code, "sweep", raw(message, fee_limit=TRX), index=index)

    with pytest.raises(SignRefused, match=refusal):
        signer().sign(unsigned)


def test_top_ups_within_the_cap_and_the_day_are_signed_and_no_more(tmp_path):
    journal = str(tmp_path / "journal.sqlite3")
    first = request("trc20usdt", "topup", raw(TransferContract(HOT, deposit(1), 20 * TRX)), index=1)
    second = request("trc20usdt", "topup", raw(TransferContract(HOT, deposit(2), 20 * TRX)), index=2)
    third = request("trc20usdt", "topup", raw(TransferContract(HOT, deposit(3), 20 * TRX)), index=3)
    large = request("trc20usdt", "topup", raw(TransferContract(HOT, deposit(3), 31 * TRX)), index=3)
    foreign = request("trc20usdt", "topup", raw(TransferContract(HOT, ATTACKER, TRX)), index=3)

    assert signer(TronJournal(journal)).sign(first).sender == HOT
    assert signer(TronJournal(journal)).sign(first).sender == HOT  # the same bytes count once
    signer(TronJournal(journal)).sign(second)  # 40 TRX today

    with pytest.raises(SignRefused, match="over the cap 30"):
        signer(TronJournal(journal)).sign(large)
    with pytest.raises(SignRefused, match="not a top-up from the hot address"):
        signer(TronJournal(journal)).sign(foreign)
    with pytest.raises(SignRefused, match=r"60 TRX of top-ups today is over the topup_daily_limit 50"):
        signer(TronJournal(journal)).sign(third)  # a restarted signer: the journal is its file


def test_delegations_go_only_unlocked_from_its_own_stake_to_its_own_deposit_address():
    honest = DelegateResourceContract(HOT, Resource.ENERGY, 500 * TRX, deposit(2))
    back = UnDelegateResourceContract(HOT, Resource.ENERGY, 500 * TRX, deposit(2))
    resource = derive_internal_address("tron", 1)
    staked = signer(resource_index=1)
    forged = {
        "locked": DelegateResourceContract(HOT, Resource.ENERGY, 500 * TRX, deposit(2), True, 100),
        "elsewhere": DelegateResourceContract(HOT, Resource.ENERGY, 500 * TRX, ATTACKER),
        "another owner": DelegateResourceContract(ATTACKER, Resource.ENERGY, 500 * TRX, deposit(2)),
    }

    assert signer().sign(request("trx", "delegate", raw(honest), index=2)).sender == HOT
    assert signer().sign(request("trx", "undelegate", raw(back), index=2)).sender == HOT
    mine = DelegateResourceContract(resource, Resource.ENERGY, TRX, deposit(2))
    assert staked.sign(request("trx", "delegate", raw(mine), index=2)).sender == resource
    with pytest.raises(SignRefused, match="hot address or the seed's resource account"):
        signer().sign(request("trx", "delegate", raw(mine), index=2))  # no resource account configured
    refusals = {}
    for name, message in forged.items():
        with pytest.raises(SignRefused) as refused:
            signer().sign(request("trx", "delegate", raw(message), index=2))
        refusals[name] = str(refused.value)
    assert "never locked" in refusals["locked"]
    assert "not a delegation to the deposit address" in refusals["elsewhere"]
    assert "resource account only" in refusals["another owner"]


def test_an_activation_is_of_its_own_deposit_address_only():
    honest = AccountCreateContract(HOT, deposit(8))

    assert signer().sign(request("trx", "activate", raw(honest), index=8)).sender == HOT
    with pytest.raises(SignRefused, match="not an activation"):
        signer().sign(request("trx", "activate", raw(AccountCreateContract(HOT, ATTACKER)), index=8))


def test_an_unknown_purpose_or_code_without_rules_is_refused():
    transfer = raw(TransferContract(HOT, deposit(1), TRX))
    unconfigured = TronSigner(DEVELOPMENT_MNEMONIC)

    with pytest.raises(SignRefused, match="unknown purpose 'gift'"):
        signer().sign(request("trx", "gift", transfer, index=1))
    with pytest.raises(SignRefused, match="no TRON signing rules for trx"):
        unconfigured.sign(request("trx", "topup", transfer, index=1))


# --- one seed, every family ---------------------------------------------------------------------------


def test_the_seed_signer_sends_a_tron_request_to_the_tron_signer():
    seed = SeedSigner(DEVELOPMENT_MNEMONIC)
    seed.signers["tron"] = signer()
    topup = request("trx", "topup", raw(TransferContract(HOT, deposit(1), TRX)), index=1)

    assert seed.hot_addresses()["tron"] == HOT
    assert seed.sign(topup).sender == HOT
    with pytest.raises(PayoutRefused, match="not a payment code"):
        seed.sign(UnsignedTx(code="doge", payload="{}", payments=(), fee=Decimal(0)))


def test_the_signer_process_signs_tron_over_its_socket_as_in_process(tmp_path):
    seed = SeedSigner(DEVELOPMENT_MNEMONIC)
    seed.signers["tron"] = signer()
    topup = request("trx", "topup", raw(TransferContract(HOT, deposit(1), TRX)), index=1)
    foreign = request("trx", "topup", raw(TransferContract(HOT, ATTACKER, TRX)), index=1)
    path, started, servers = str(tmp_path / "signer.sock"), threading.Event(), []

    def ready(server):
        servers.append(server)
        started.set()

    thread = threading.Thread(target=serve, args=(seed, path), kwargs={"ready": ready})
    thread.start()
    try:
        assert started.wait(10)
        remote = TronSocketSigner(path)
        assert remote.sign(topup) == signer().sign(topup)  # deterministic: the same bytes
        with pytest.raises(SignRefused, match="not a top-up from the hot address") as refused:
            remote.sign(foreign)
    finally:
        if servers:
            servers[0].shutdown()
        thread.join(10)
    assert refused.value.refused_by == "The TRON signer"


def test_a_configured_tron_key_of_another_seed_stops_the_signer_process(settings):
    other = Bip39SeedGenerator(str(Bip39MnemonicGenerator().FromWordsNumber(12))).Generate()
    foreign = Bip32Secp256k1.FromSeedAndPath(other, "m/44'/195'/0'").PublicKey().ToExtended()
    settings.CHAIN_XPUBS = {"tron": foreign}

    with pytest.raises(SeedMismatch, match=r"not the one behind CHAIN_XPUBS\['tron'\]"):
        SeedSigner(DEVELOPMENT_MNEMONIC)
    settings.CHAIN_XPUBS = {}
    assert set(SeedSigner(DEVELOPMENT_MNEMONIC).signers) == {"evm", "tron", "ton", "sol", "near"}


# --- on the devnet: what the signer signed is mined -----------------------------------------------------


def devnet_raw(devnet, message: ContractMessage, *, fee_limit: int = 0) -> RawData:
    """`message` referring to the devnet's head block, expiring a minute from now (the devnet's clock is
    brought to ours first: the signer refuses by its own clock)."""
    head = devnet.post("wallet/getnowblock")
    behind = now_ms() - head["block_header"]["raw_data"]["timestamp"]
    if behind > 0:
        head = devnet.post("wallet/getblockbynum", {"num": devnet.mine(skip_seconds=behind // 1000)["head"]})
    reference = tapos(head["block_header"]["raw_data"]["number"], head["blockID"])
    return single(
        message, ref_block=reference, expiration=now_ms() + 60_000, fee_limit=fee_limit, timestamp=now_ms()
    )


def mined(devnet, signed) -> str:
    """Broadcast the stored form of `signed` and mine it: its contract's result."""
    answer = devnet.send(json.loads(signed.raw))
    assert answer["result"] is True, answer
    devnet.mine()
    return str(devnet.post("wallet/gettransactionbyid", {"value": signed.txid})["ret"][0]["contractRet"])


def test_a_signed_token_payout_is_mined_on_the_devnet(tron_devnet, db):  # noqa: F811
    token = address.to_base58(tron_devnet.token)
    bob = tron_devnet.accounts["bob"].address
    tron_devnet.fund(HOT, sun=100 * TRX, token=50 * TRX)
    tron_devnet.mine()
    company = CompanyFactory()
    fund(company, "trc20usdt", "100")
    [accepted] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="trc20usdt", amount=Decimal("12.5"), to=bob, tag="")]
    )
    before = tron_devnet.token_balance(bob)
    message = token_transfer(HOT, bob, Decimal("12.5"), token=token)
    unsigned = request(
        "trc20usdt", "payout", devnet_raw(tron_devnet, message, fee_limit=30 * TRX), ref=accepted.reference
    )

    signed = signer(token=token).sign(unsigned)

    assert mined(tron_devnet, signed) == "SUCCESS"
    assert tron_devnet.info_by_id(signed.txid)["receipt"]["result"] == "SUCCESS"
    assert tron_devnet.token_balance(bob) - before == 12_500_000


def test_a_top_up_delegation_sweep_and_undelegation_are_mined_on_the_devnet(tron_devnet):  # noqa: F811
    token = address.to_base58(tron_devnet.token)
    signing = signer(token=token)
    tron_devnet.fund(HOT, sun=10_000 * TRX)
    tron_devnet.fund(deposit(3), token=7 * TRX)
    tron_devnet.mine()
    tron_devnet.stake(HOT, 5_000 * TRX)

    def sign(purpose: str, message: ContractMessage, fee_limit: int = 0):
        raw_data = devnet_raw(tron_devnet, message, fee_limit=fee_limit)
        return signing.sign(request("trc20usdt", purpose, raw_data, index=3))

    topup = sign("topup", TransferContract(HOT, deposit(3), 2 * TRX))  # activates the address too
    assert mined(tron_devnet, topup) == "SUCCESS"
    delegation = sign("delegate", DelegateResourceContract(HOT, Resource.ENERGY, 5_000 * TRX, deposit(3)))
    assert mined(tron_devnet, delegation) == "SUCCESS"
    # fee_limit caps the energy used, delegated or not: 10 TRX (~24k energy) runs OUT_OF_ENERGY here.
    sweep = sign("sweep", token_transfer(deposit(3), HOT, Decimal(7), token=token), fee_limit=50 * TRX)
    assert mined(tron_devnet, sweep) == "SUCCESS"
    back = sign("undelegate", UnDelegateResourceContract(HOT, Resource.ENERGY, 5_000 * TRX, deposit(3)))
    assert mined(tron_devnet, back) == "SUCCESS"

    receipt = tron_devnet.info_by_id(sweep.txid)["receipt"]
    assert receipt["result"] == "SUCCESS" and "energy_fee" not in receipt  # the delegated energy paid
    assert sweep.sender == deposit(3) and topup.sender == delegation.sender == back.sender == HOT
    assert tron_devnet.token_balance(deposit(3)) == 0 and tron_devnet.token_balance(HOT) == 7 * TRX
