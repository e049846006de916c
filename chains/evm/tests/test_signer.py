"""The EVM signer: the sealed seed, the process's checks at start, and signing over its Unix socket with the
same refusals as in-process; the addresses it pays come from its own seed, never from the database; the
gas top-ups of a day are capped in its journal; an idle client holds up no one."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal

import pytest
from bip_utils import Bip32Secp256k1, Bip39MnemonicGenerator, Bip39SeedGenerator
from django.core.management import CommandError, call_command
from web3 import Web3

from chains.base import FeeQuote, Payment
from chains.derivation import DEVELOPMENT_MNEMONIC, derive_address
from chains.evm.node import NATIVE_GAS, hot_address, to_units
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
from chains.evm.sweeps import evm_sweep
from chains.models import ChainTx, Sweep
from tests.chain import fund
from tests.evm import eth_tester_chain
from tests.factories import CompanyFactory, InvoiceFactory
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


def test_signer_seed_prints_the_chain_xpubs_its_seed_serves(tmp_path, monkeypatch, settings):
    import io
    import json

    from chains.signers import SeedSigner

    mnemonic = str(Bip39MnemonicGenerator().FromWordsNumber(24))
    monkeypatch.setenv("KASSA_SIGNER_PASSPHRASE", PASSPHRASE)
    monkeypatch.setattr("sys.stdin", io.StringIO(mnemonic + "\n"))
    out = io.StringIO()
    call_command("signer_seed", "--seed-file", str(tmp_path / "signer.seed"), stdout=out)

    [line] = [text for text in out.getvalue().splitlines() if text.startswith("CHAIN_XPUBS=")]
    settings.CHAIN_XPUBS = json.loads(line.removeprefix("CHAIN_XPUBS=").strip("'"))
    assert set(settings.CHAIN_XPUBS) == {"evm", "tron", "ton", "sol", "near"}
    assert " ".join(mnemonic.split()[:3]) not in out.getvalue()  # public keys only
    # Configured as printed, the signer process serves every family with this seed.
    assert set(SeedSigner(mnemonic).signers) == {"evm", "tron", "ton", "sol", "near"}


@pytest.mark.django_db(transaction=True)
def test_the_signer_process_signs_the_stored_plan_and_refuses_anything_else(tmp_path, settings):
    honest = _honest_payout(settings)

    path = str(tmp_path / "signer.sock")
    with _serving(path) as remote:
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


def _honest_payout(settings):
    """The signing request of a merchant's accepted withdrawal of 1 eth, as the planner builds it."""
    _chain, backend, company = _eth_with_a_funded_merchant(settings)
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="eth", amount=Decimal(1), to="0x" + "ab" * 20, tag="")]
    )
    fee = FeeQuote(rate=Decimal(3), unit="gwei", source="test", priority=Decimal(1))
    return backend.build("eth", [Payment(withdrawal.reference, withdrawal.to_address, "", Decimal(1))], fee)


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


@contextmanager
def _serving(path: str, **options) -> Iterator[SocketSigner]:
    """The signer process's socket server, in a thread of this process, and a client of it."""
    started, servers = threading.Event(), []

    def ready(server):
        servers.append(server)
        started.set()

    thread = threading.Thread(
        target=serve, args=(LocalSigner(DEVELOPMENT_MNEMONIC), path), kwargs={"ready": ready, **options}
    )
    thread.start()
    try:
        assert started.wait(10)
        yield SocketSigner(path)
    finally:
        if servers:
            servers[0].shutdown()
        thread.join(10)


@pytest.mark.django_db(transaction=True)
def test_an_idle_connection_holds_up_no_other_signing_request(tmp_path, settings):
    honest = _honest_payout(settings)

    path = str(tmp_path / "signer.sock")
    with _serving(path, deadline=1) as remote, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        idle.settimeout(30)
        idle.connect(path)
        idle.sendall(b'{"code": "eth", ')  # half a request, then nothing: the server waits on it
        # Another client is answered meanwhile (one server thread per connection).
        assert remote.sign(honest).sender.lower() == hot_address().lower()
        # And the idle one is closed unanswered once its deadline passes.
        assert idle.recv(1024) == b""


# --- the addresses come from the signer's seed --------------------------------------------------------

ATTACKER = "0x" + "66" * 20


def _token_chain(settings, **nodes):
    chain = eth_tester_chain()
    chain.deploy_token()
    settings.CHAIN_BACKENDS = {"eth": "evm", "usdterc20": "evm"}
    settings.CHAIN_NODES = {code: dict(entry, **nodes) for code, entry in chain.nodes().items()}
    backend = chain.backend()
    chain.fund_hot(eth="10")
    return chain, backend


def test_a_sweep_row_naming_a_foreign_address_gets_no_top_up(settings, db):
    # A worker that can write the database adds token sweeps waiting for gas whose address is its own
    # (at an index of the house's, or one the house never used): the signer derives the deposit address at
    # the index itself and pays nothing else.
    chain, _backend = _token_chain(settings)
    for n, index in enumerate([0, 7, 2**31 + 1]):
        address = "0x" + f"{n + 1:02x}" * 20
        Sweep.objects.create(
            code="usdterc20",
            address=address,
            derivation_index=index,
            amount=Decimal(100),
            status=Sweep.Status.TOPUP,
        )
    evm_sweep("usdterc20")
    for sweep in Sweep.objects.all():
        assert sweep.status == Sweep.Status.TOPUP and sweep.topup_tx is None
        assert f"not the deposit address {sweep.derivation_index} of the signer's seed" in sweep.last_error
        assert chain.balance(sweep.address) == 0
    assert not ChainTx.objects.exists()


def test_a_sweep_goes_only_to_the_hot_address_of_the_signers_seed(settings, db):
    # A worker whose configuration names another account key asks for a sweep to "the hot address" of that
    # key, the attacker's: the signer pays only its own hot address.
    chain = eth_tester_chain()
    settings.CHAIN_BACKENDS = {"eth": "evm"}
    settings.CHAIN_NODES = chain.nodes(token=False)
    chain.backend()
    chain.scan()
    invoice = InvoiceFactory(code="eth", total="100")
    address = invoice.deposit_address.address
    chain.pay(address, invoice.amount_due)
    chain.scan(12)
    evm_sweep("eth")  # opened: READY
    sweep = Sweep.objects.get()
    assert sweep.status == Sweep.Status.READY

    other = Bip39SeedGenerator(str(Bip39MnemonicGenerator().FromWordsNumber(12))).Generate()
    foreign_xpub = Bip32Secp256k1.FromSeedAndPath(other, "m/44'/60'/0'").PublicKey().ToExtended()
    settings.CHAIN_XPUBS = {**settings.CHAIN_XPUBS, "evm": foreign_xpub}
    foreign_hot = hot_address()
    evm_sweep("eth")
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.READY and sweep.sweep_tx is None
    assert "does not move exactly what the stored plan says" in sweep.last_error
    assert chain.balance(foreign_hot) == 0 and chain.balance(address) == invoice.amount_due


def _topup(backend, sweep, value, nonce):
    """The top-up request of `sweep` as the sweeper builds it (chains.evm.sweeps), of `value` eth."""
    from chains.evm.config import evm_config

    fee = FeeQuote(rate=Decimal(3), unit="gwei", source="test", priority=Decimal(1))
    to = Web3.to_checksum_address(sweep.address)
    call = {"to": to, "value": to_units(Decimal(value), 18), "data": "0x"}
    tx = backend.transaction(evm_config("usdterc20"), call, gas=NATIVE_GAS, fee=fee, nonce=nonce)
    return backend.unsigned(
        "usdterc20", tx, purpose="topup", ref=f"sweep:{sweep.pk}", payments=(), sender=hot_address()
    )


def test_top_ups_beyond_the_daily_limit_are_refused_even_after_a_restart(tmp_path, settings, db):
    _chain, backend = _token_chain(settings, topup_cap="0.02", topup_daily_limit="0.025")
    sweeps = [
        Sweep.objects.create(
            code="usdterc20",
            address=derive_address("usdterc20", index)[0].lower(),
            derivation_index=index,
            amount=Decimal(100),
            status=Sweep.Status.TOPUP,
        )
        for index in range(4)
    ]
    journal = str(tmp_path / "journal.sqlite3")
    signer = LocalSigner(DEVELOPMENT_MNEMONIC, SignerJournal(journal))
    signer.sign(_topup(backend, sweeps[0], "0.01", nonce=0))
    signer.sign(_topup(backend, sweeps[1], "0.01", nonce=1))  # 0.02 today
    over = r"0\.03 of gas top-ups today is over the topup_daily_limit 0\.025 of usdterc20"
    with pytest.raises(SignRefused, match=over):
        signer.sign(_topup(backend, sweeps[2], "0.01", nonce=2))
    # A replacement that sends more counts what it adds: 0.02 + 0.01 more.
    with pytest.raises(SignRefused, match=over):
        signer.sign(_topup(backend, sweeps[0], "0.02", nonce=0))

    restarted = LocalSigner(DEVELOPMENT_MNEMONIC, SignerJournal(journal))
    with pytest.raises(SignRefused, match=over):
        restarted.sign(_topup(backend, sweeps[3], "0.01", nonce=2))
    assert restarted.sign(_topup(backend, sweeps[2], "0.005", nonce=2)).nonce == 2  # 0.025: within
    assert restarted.sign(_topup(backend, sweeps[0], "0.01", nonce=0)).nonce == 0  # the same again
