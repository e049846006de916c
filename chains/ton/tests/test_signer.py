"""The TON signer reads the unsigned message it is asked to sign and signs only a processing withdrawal's
payout from the house wallet: exactly its address, amount, comment and bounce flag, one message, mode 3,
the house wallet's id, a valid_until ahead and not too far; within the limits, and one message a
withdrawal while the first may still land. Its signature verifies with the house key, and it serves over
the signer process's socket beside the other families."""

from __future__ import annotations

import base64
import json
import threading
import time
from decimal import Decimal

import pytest
from bip_utils import Bip39MnemonicGenerator
from nacl.signing import VerifyKey
from pytoniq_core import Address, Cell, begin_cell

from chains.base import UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.evm.signer import serve
from chains.signers import SeedMismatch, SeedSigner
from chains.ton.keys import development_public_key, house_display
from chains.ton.messages import parse_message
from chains.ton.policy import SignRefused, TonRules, signing_request
from chains.ton.signer import TonJournal, TonSigner, TonSocketSigner, private_key
from chains.ton.wallet import (
    DEFAULT_SEND_MODE,
    DEFAULT_WALLET_ID,
    Transfer,
    comment_body,
    internal_message,
    normalized_hash,
    public_key_of,
    signing_message,
    wallet_v4r2_address,
)
from tests.chain import fund
from tests.factories import CompanyFactory
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_reject, withdrawal_request

TON = 10**9
PAYEE = Address((0, bytes(range(32))))
PAYEE_BOUNCEABLE = PAYEE.to_str(is_user_friendly=True, is_url_safe=True, is_bounceable=True)  # EQ…
PAYEE_PLAIN = PAYEE.to_str(is_user_friendly=True, is_url_safe=True, is_bounceable=False)  # UQ…
ATTACKER = Address((0, b"\x66" * 32)).to_str(is_bounceable=False)
HOUSE = wallet_v4r2_address(development_public_key())
TAG = "invoice 1"  # a ton withdrawal names the receiver's comment


def now() -> int:
    return int(time.time())


def signer(journal: TonJournal | None = None, *, gone: bool = False, clock=None, **limits) -> TonSigner:
    rules = TonRules(code="ton", **limits)
    return TonSigner(
        DEVELOPMENT_MNEMONIC,
        journal,
        rules=lambda code: rules,
        gone=lambda code, txid, seqno, valid_until: gone,
        clock=clock or now,
    )


def unsigned(
    to: str,
    amount: int,
    *,
    comment: str | None = TAG,
    bounce: bool | None = None,
    seqno: int = 3,
    valid_in: int = 600,
    wallet_id: int = DEFAULT_WALLET_ID,
    mode: int = DEFAULT_SEND_MODE,
) -> Cell:
    transfer = Transfer(to, amount, comment=comment, bounce=bounce, send_mode=mode)
    built = signing_message(transfer, seqno=seqno, valid_until=now() + valid_in, wallet_id=wallet_id)
    return built.end_cell()


def request(ref: str, message: Cell | str) -> UnsignedTx:
    if isinstance(message, Cell):
        payload = signing_request(ref, message)
    else:
        payload = json.dumps({"purpose": "payout", "ref": ref, "message": message})
    return UnsignedTx(code="ton", payload=payload, payments=(), fee=Decimal("0.005"))


def _withdraw(company, amount: str = "12.5", to: str = PAYEE_BOUNCEABLE, tag: str = TAG):
    [accepted] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="ton", amount=Decimal(amount), to=to, tag=tag)]
    )
    return accepted


@pytest.fixture
def company(db):
    company = CompanyFactory()
    fund(company, "ton", "1000")
    return company


@pytest.fixture
def withdrawal(company):
    return _withdraw(company)


# --- what is signed -----------------------------------------------------------------------------------------


def test_the_stored_payout_is_signed_by_the_house_key_as_one_external_message(withdrawal):
    cell = unsigned(PAYEE_BOUNCEABLE, int(12.5 * TON), seqno=0)

    signed = signer().sign(request(withdrawal.reference, cell))

    stored = json.loads(signed.raw)
    message = parse_message(Cell.one_from_boc(base64.b64decode(stored["boc"])))
    assert (message.kind, message.destination) == ("external-in", f"0:{HOUSE.hash_part.hex()}")
    assert message.has_init  # seqno 0: the first message deploys the wallet
    body = message.body.begin_parse()
    signature = body.load_bytes(64)
    VerifyKey(development_public_key()).verify(cell.hash, signature)  # raises when it does not verify
    assert body.to_cell().hash == cell.hash  # what was signed is what was asked, nothing added
    assert signed.txid == normalized_hash(HOUSE, message.body).hex()
    assert (stored["seqno"], stored["valid_until"]) == (0, cell.begin_parse().skip_bits(32).load_uint(32))
    assert signed.sender == house_display(HOUSE) and signed.fee == Decimal("0.005")
    later = signer().sign(request(withdrawal.reference, cell))
    assert later == signed  # the same message: the same signature (ed25519 is deterministic)


def test_a_payout_with_its_comment_to_a_non_bounceable_address_is_signed(company):
    withdrawal = _withdraw(company, "1", to=PAYEE_PLAIN, tag="memo 77")

    signed = signer().sign(request(withdrawal.reference, unsigned(PAYEE_PLAIN, TON, comment="memo 77")))

    assert signed.txid


def _forged(reference: str) -> dict[str, Cell | str]:
    amount = int(12.5 * TON)
    extra = begin_cell().store_cell(unsigned(PAYEE_BOUNCEABLE, amount))
    two = unsigned(PAYEE_BOUNCEABLE, amount).begin_parse()
    second = internal_message(Address(ATTACKER), TON, bounce=False, body=None)
    op_1 = (
        begin_cell()
        .store_uint(DEFAULT_WALLET_ID, 32)
        .store_uint(now() + 600, 32)
        .store_uint(3, 32)
        .store_uint(1, 8)  # op 1: deploy and install a plugin
        .store_uint(DEFAULT_SEND_MODE, 8)
    )
    return {
        "another destination": unsigned(ATTACKER, amount),
        "another amount": unsigned(PAYEE_BOUNCEABLE, amount + 1),
        "non-bounceable to a bounceable address": unsigned(PAYEE_BOUNCEABLE, amount, bounce=False),
        "another comment": unsigned(PAYEE_BOUNCEABLE, amount, comment="hi"),
        "no comment": unsigned(PAYEE_BOUNCEABLE, amount, comment=None),
        "mode 128: the whole balance": unsigned(PAYEE_BOUNCEABLE, amount, mode=128),
        "mode 64": unsigned(PAYEE_BOUNCEABLE, amount, mode=64 | 2),
        "another wallet_id": unsigned(PAYEE_BOUNCEABLE, amount, wallet_id=DEFAULT_WALLET_ID + 1),
        "valid_until past": unsigned(PAYEE_BOUNCEABLE, amount, valid_in=-5),
        "valid_until too far ahead": unsigned(PAYEE_BOUNCEABLE, amount, valid_in=2 * 3600),
        "extra bits": extra.store_uint(1, 8).end_cell(),
        "a second message": begin_cell()
        .store_bits(two.load_bits(two.remaining_bits))
        .store_ref(two.load_ref())
        .store_uint(DEFAULT_SEND_MODE, 8)
        .store_ref(second)
        .end_cell(),
        "op 1 (not a simple send)": op_1.store_ref(second).end_cell(),
        "garbage": base64.b64encode(b"\x00garbage\xff" * 4).decode(),
        "a bare hash": base64.b64encode(bytes(32)).decode(),
        "not base64": "not base64!",
    }


FORGED_REFUSALS = {
    "another destination": "not withdrawal .*'s address",
    "another amount": "pays 12.500000001 TON, not withdrawal",
    "non-bounceable to a bounceable address": "is sent bounceable",
    "another comment": "body is not withdrawal",
    "no comment": "body is not withdrawal",
    "mode 128: the whole balance": "sent with mode 3, not 128",
    "mode 64": "sent with mode 3, not 66",
    "another wallet_id": "is not the house wallet's",
    "valid_until past": "the message expired",
    "valid_until too far ahead": "more than 3600 s from now",
    "extra bits": "not a wallet v4R2 simple send",
    "a second message": "exactly one internal message, not 2",
    "op 1 (not a simple send)": "only a simple send",
    "garbage": "not a BOC",
    "a bare hash": "a bare hash is never signed",
    "not base64": "not base64",
}


@pytest.mark.parametrize("forgery", list(FORGED_REFUSALS))
def test_a_message_unlike_the_stored_payout_is_refused(withdrawal, forgery):
    message = _forged(withdrawal.reference)[forgery]

    with pytest.raises(SignRefused, match=FORGED_REFUSALS[forgery]):
        signer().sign(request(withdrawal.reference, message))


def test_a_message_with_a_field_the_decoder_does_not_read_is_refused(withdrawal):
    """created_lt set in the internal message: every field checked agrees, the rebuilt message does not."""
    amount = int(12.5 * TON)
    honest = internal_message(PAYEE, amount, bounce=True, body=None).begin_parse()
    head = honest.load_bits(4 + 2 + 267)  # flags, src addr_none, dest
    odd = begin_cell().store_bits(head).store_coins(amount).store_bit(0).store_coins(0).store_coins(0)
    odd = odd.store_uint(7, 64).store_uint(0, 32).store_bit(0).store_bit(0).store_cell(comment_body(TAG))
    odd = odd.end_cell()
    cell = (
        begin_cell()
        .store_uint(DEFAULT_WALLET_ID, 32)
        .store_uint(now() + 600, 32)
        .store_uint(3, 32)
        .store_uint(0, 8)
        .store_uint(DEFAULT_SEND_MODE, 8)
        .store_ref(odd)
        .end_cell()
    )

    with pytest.raises(SignRefused, match="holds more than the payout"):
        signer().sign(request(withdrawal.reference, cell))


def test_a_request_carrying_a_hash_instead_of_the_message_is_refused(withdrawal):
    payload = json.dumps({"purpose": "payout", "ref": withdrawal.reference, "hash": "ab" * 32})

    with pytest.raises(SignRefused, match="a bare hash is never signed"):
        signer().sign(UnsignedTx(code="ton", payload=payload, payments=(), fee=Decimal(0)))
    with pytest.raises(SignRefused, match="signs payouts only"):
        signer().sign(UnsignedTx(code="ton", payload='{"purpose": "sweep"}', payments=(), fee=Decimal(0)))
    with pytest.raises(SignRefused, match="a JSON object"):
        signer().sign(UnsignedTx(code="ton", payload="[", payments=(), fee=Decimal(0)))


def test_an_unknown_or_finished_withdrawal_is_refused(withdrawal):
    cell = unsigned(PAYEE_BOUNCEABLE, int(12.5 * TON))

    with pytest.raises(SignRefused, match="no withdrawal 'withdrawal:nope' of ton"):
        signer().sign(request("withdrawal:nope", cell))
    withdrawal_reject(uid=withdrawal.uid, reason="test")
    with pytest.raises(SignRefused, match="is rejected, not processing"):
        signer().sign(request(withdrawal.reference, cell))


def test_payouts_over_the_payout_or_the_daily_limit_are_refused(company):
    first, second = _withdraw(company, "12"), _withdraw(company, "12")
    limited = signer(payout_limit=Decimal(15), daily_limit=Decimal(20))

    limited.sign(request(first.reference, unsigned(PAYEE_BOUNCEABLE, 12 * TON, seqno=3)))
    with pytest.raises(SignRefused, match=r"24 ton today is over the daily limit 20"):
        limited.sign(request(second.reference, unsigned(PAYEE_BOUNCEABLE, 12 * TON, seqno=4)))
    with pytest.raises(SignRefused, match=f"this very message was signed for {first.reference}"):
        limited.sign(request(second.reference, unsigned(PAYEE_BOUNCEABLE, 12 * TON, seqno=3)))
    big = _withdraw(company, "16")
    with pytest.raises(SignRefused, match="16 ton is over the payout limit 15"):
        limited.sign(request(big.reference, unsigned(PAYEE_BOUNCEABLE, 16 * TON)))


def test_a_withdrawal_is_signed_as_one_message_until_that_one_can_never_pay(withdrawal, tmp_path):
    journal = str(tmp_path / "journal.sqlite3")
    amount = int(12.5 * TON)
    first = request(withdrawal.reference, unsigned(PAYEE_BOUNCEABLE, amount, seqno=3))
    other = request(withdrawal.reference, unsigned(PAYEE_BOUNCEABLE, amount, seqno=4, valid_in=900))
    signed = signer(TonJournal(journal)).sign(first)

    with pytest.raises(SignRefused, match="which may land until"):
        signer(TonJournal(journal)).sign(other)  # a restarted signer: the journal is its file
    past = lambda: now() + 700  # noqa: E731 - past the first one's valid_until and the margin
    with pytest.raises(SignRefused, match="which may have paid it"):
        signer(TonJournal(journal), clock=past).sign(other)  # its seqno moved on, or the node cannot tell
    rebuilt = signer(TonJournal(journal), gone=True).sign(other)  # the first expired unused, or bounced
    assert rebuilt.txid != signed.txid


# --- one seed, every family ---------------------------------------------------------------------------------


def test_the_key_is_slip10_m_44_607_0_and_matches_the_configured_public_key(settings):
    assert public_key_of(private_key(DEVELOPMENT_MNEMONIC)) == development_public_key()
    seed = SeedSigner(DEVELOPMENT_MNEMONIC)
    assert set(seed.signers) == {"evm", "tron", "ton", "sol", "near"}
    assert seed.hot_addresses()["ton"] == house_display(HOUSE)

    other = str(Bip39MnemonicGenerator().FromWordsNumber(12))
    settings.CHAIN_XPUBS = {"ton": public_key_of(private_key(other)).hex()}
    with pytest.raises(SeedMismatch, match=r"not the one behind CHAIN_XPUBS\['ton'\]"):
        SeedSigner(DEVELOPMENT_MNEMONIC)
    assert TonSigner(other).matches_configuration()


def test_the_signer_process_signs_ton_over_its_socket_as_in_process(transactional_db, tmp_path):
    company = CompanyFactory()  # committed: the socket's thread reads it on its own connection
    fund(company, "ton", "100")
    withdrawal = _withdraw(company)
    seed = SeedSigner(DEVELOPMENT_MNEMONIC)
    seed.signers["ton"] = signer()
    honest = request(withdrawal.reference, unsigned(PAYEE_BOUNCEABLE, int(12.5 * TON)))
    forged = request(withdrawal.reference, unsigned(ATTACKER, int(12.5 * TON)))
    path, started, servers = str(tmp_path / "signer.sock"), threading.Event(), []

    def ready(server):
        servers.append(server)
        started.set()

    thread = threading.Thread(target=serve, args=(seed, path), kwargs={"ready": ready})
    thread.start()
    try:
        assert started.wait(10)
        remote = TonSocketSigner(path)
        assert remote.sign(honest) == signer().sign(honest)
        with pytest.raises(SignRefused, match="not withdrawal") as refused:
            remote.sign(forged)
    finally:
        if servers:
            servers[0].shutdown()
        thread.join(10)
    assert refused.value.refused_by == "The TON signer"
