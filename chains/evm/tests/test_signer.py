"""The EVM signer: the sealed seed, the process's checks at start, and signing over its Unix socket with the
same refusals as in-process."""

from __future__ import annotations

import json
import threading
from decimal import Decimal

import pytest
from bip_utils import Bip39MnemonicGenerator
from django.core.management import CommandError, call_command

from chains.base import FeeQuote, Payment
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.evm.node import hot_address
from chains.evm.policy import SignRefused
from chains.evm.signer import (
    LocalSigner,
    SignerJournal,
    SignerUnavailable,
    SocketSigner,
    seal,
    serve,
    unseal,
)
from tests.chain import fund
from tests.evm import eth_tester_chain
from tests.factories import CompanyFactory
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

PASSPHRASE = "correct horse battery staple"


def test_a_sealed_seed_opens_only_with_its_passphrase():
    blob = seal(DEVELOPMENT_MNEMONIC, PASSPHRASE)
    assert DEVELOPMENT_MNEMONIC.encode() not in blob and b"abandon" not in blob
    assert unseal(blob, PASSPHRASE) == DEVELOPMENT_MNEMONIC
    with pytest.raises(ValueError, match="cannot be opened"):
        unseal(blob, PASSPHRASE + "!")
    with pytest.raises(ValueError, match="mnemonic"):
        seal("not a mnemonic at all", PASSPHRASE)
    with pytest.raises(ValueError, match="12 characters"):
        seal(DEVELOPMENT_MNEMONIC, "short")


def test_signer_seed_writes_a_file_that_run_signer_opens(tmp_path, monkeypatch, settings):
    import io

    seed_file = tmp_path / "signer.seed"
    monkeypatch.setenv("KASSA_SIGNER_PASSPHRASE", PASSPHRASE)
    monkeypatch.setattr("sys.stdin", io.StringIO(DEVELOPMENT_MNEMONIC + "\n"))
    call_command("signer_seed", "--seed-file", str(seed_file))
    assert seed_file.stat().st_mode & 0o777 == 0o600
    with pytest.raises(CommandError, match="never overwritten"):
        call_command("signer_seed", "--seed-file", str(seed_file))

    # Another seed than the one behind CHAIN_XPUBS["evm"] (here: the development key): refused at start.
    other = tmp_path / "other.seed"
    other.write_bytes(seal(str(Bip39MnemonicGenerator().FromWordsNumber(12)), PASSPHRASE))
    monkeypatch.setenv("KASSA_SIGNER_PASSPHRASE", PASSPHRASE)
    with pytest.raises(CommandError, match="not the one behind"):
        call_command("run_signer", "--seed-file", str(other), "--socket", str(tmp_path / "s.sock"))
    monkeypatch.setenv("KASSA_SIGNER_PASSPHRASE", "wrong passphrase!!")
    with pytest.raises(CommandError, match="cannot be opened"):
        call_command("run_signer", "--seed-file", str(seed_file), "--socket", str(tmp_path / "s.sock"))


@pytest.mark.django_db(transaction=True)
def test_the_signer_process_signs_the_stored_plan_and_refuses_anything_else(tmp_path, settings):
    _chain, backend, company = _eth_with_a_funded_merchant(settings)
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="eth", amount=Decimal(1), to="0x" + "ab" * 20, tag="")]
    )
    fee = FeeQuote(rate=Decimal(3), unit="gwei", source="test", priority=Decimal(1))
    honest = backend.build("eth", [Payment(withdrawal.reference, withdrawal.to_address, "", Decimal(1))], fee)

    path = str(tmp_path / "signer.sock")
    started = threading.Event()
    servers = []

    def ready(server):
        servers.append(server)
        started.set()

    thread = threading.Thread(
        target=serve, args=(LocalSigner(DEVELOPMENT_MNEMONIC), path), kwargs={"ready": ready}
    )
    thread.start()
    try:
        assert started.wait(10)
        remote = SocketSigner(path)
        signed = remote.sign(honest)
        assert signed == LocalSigner(DEVELOPMENT_MNEMONIC).sign(honest)  # deterministic: the same bytes
        assert signed.sender.lower() == hot_address().lower() and signed.nonce == honest.nonce

        payload = json.loads(honest.payload)
        payload["tx"]["to"] = "0x" + "cd" * 20
        forged = honest.__class__(code="eth", payload=json.dumps(payload), payments=(), fee=honest.fee)
        with pytest.raises(SignRefused, match="does not move exactly what the stored plan says"):
            remote.sign(forged)
        assert remote.ask({"nonsense": True}) == {
            "error": "a request is one JSON object with code and payload"
        }
    finally:
        servers[0].shutdown()
        thread.join(10)
    with pytest.raises(SignerUnavailable):
        SocketSigner(str(tmp_path / "absent.sock")).sign(honest)


def test_the_journal_signs_a_withdrawal_once_whatever_the_database_says(tmp_path, settings, db):
    _chain, backend, company = _eth_with_a_funded_merchant(settings, daily_limit="2.5")
    first, second, third = withdrawal_request(
        company=company,
        items=[
            WithdrawalItem(asset="eth", amount=Decimal(amount), to="0x" + "ab" * 20, tag="")
            for amount in ("1", "1", "1")
        ],
    )

    def request(withdrawal, nonce, rate="3"):
        quote = FeeQuote(rate=Decimal(rate), unit="gwei", source="test", priority=Decimal(1))
        unsigned = backend.build(
            "eth", [Payment(withdrawal.reference, withdrawal.to_address, "", Decimal(1))], quote
        )
        payload = json.loads(unsigned.payload)
        payload["tx"]["nonce"] = nonce
        return unsigned.__class__(code="eth", payload=json.dumps(payload), payments=(), fee=unsigned.fee)

    journal = str(tmp_path / "journal.sqlite3")
    signer = LocalSigner(DEVELOPMENT_MNEMONIC, SignerJournal(journal))
    assert (tmp_path / "journal.sqlite3").stat().st_mode & 0o777 == 0o600
    signer.sign(request(first, 0))
    # A worker that can write the database (nothing of that signature is stored there) asks again with
    # another nonce: that would be a second transaction paying the same withdrawal. Refused, even after a
    # restart of the signer.
    with pytest.raises(SignRefused, match="signed already with nonce 0"):
        signer.sign(request(first, 7))
    restarted = LocalSigner(DEVELOPMENT_MNEMONIC, SignerJournal(journal))
    with pytest.raises(SignRefused, match="signed already with nonce 0"):
        restarted.sign(request(first, 7))
    assert restarted.sign(request(first, 0, rate="5")).nonce == 0  # a replacement: same nonce, higher fee
    restarted.sign(request(second, 1))  # 2 eth today
    with pytest.raises(SignRefused, match=r"3 eth today is over the daily limit 2\.5"):
        restarted.sign(request(third, 2))


def test_a_plan_that_lost_its_nonce_is_signed_again_once_that_nonce_is_used(settings, db):
    chain, backend, company = _eth_with_a_funded_merchant(settings)
    lost, won = withdrawal_request(
        company=company,
        items=[
            WithdrawalItem(asset="eth", amount=Decimal(1), to="0x" + n * 20, tag="") for n in ("ab", "cd")
        ],
    )
    fee = FeeQuote(rate=Decimal(3), unit="gwei", source="test", priority=Decimal(1))
    signer = LocalSigner(DEVELOPMENT_MNEMONIC)

    def request(withdrawal):
        payment = Payment(withdrawal.reference, withdrawal.to_address, "", Decimal(1))
        return backend.build("eth", [payment], fee)  # the next nonce as stored (none yet: the chain's)

    first = signer.sign(request(lost))  # nonce 0: its plan then loses the nonce to another
    second = signer.sign(request(won))  # nonce 0 as well
    assert first.nonce == second.nonce == 0
    with pytest.raises(SignRefused, match="signed already with nonce 0"):  # nonce 0 still unused
        signer.sign(with_nonce(request(lost), 1))
    assert backend.broadcast("eth", second).value == "accepted"  # mined: nonce 0 is used
    again = signer.sign(with_nonce(request(lost), 1))
    assert again.nonce == 1 and chain.balance("0x" + "ab" * 20) == 0


def with_nonce(unsigned, nonce):
    payload = json.loads(unsigned.payload)
    payload["tx"]["nonce"] = nonce
    return unsigned.__class__(code="eth", payload=json.dumps(payload), payments=(), fee=unsigned.fee)


def _eth_with_a_funded_merchant(settings, **nodes):
    """eth on an in-process chain, its hot address funded, and a merchant holding 10 eth."""
    chain = eth_tester_chain()
    settings.CHAIN_BACKENDS = {"eth": "evm"}
    settings.CHAIN_NODES = chain.nodes(token=False, **nodes)
    backend = chain.backend()
    chain.fund_hot()
    company = CompanyFactory()
    fund(company, "eth", "10")
    return chain, backend, company
