"""The EVM signer: the only holder of the EVM seed (docs/decisions.md, "Custody of EVM keys").

- `manage.py signer_seed --seed-file PATH` seals a BIP-39 mnemonic (read from standard input) under a
  passphrase: scrypt (random salt) and AES-256-GCM, so the file alone is useless.
- `manage.py run_signer --seed-file PATH --socket PATH` opens it with the passphrase from
  `KASSA_SIGNER_PASSPHRASE` (its own environment, not the web's or the workers'), checks that the seed is the
  one behind `CHAIN_XPUBS["evm"]`, and answers signing requests on a Unix socket (and requests for the
  public keys of NEAR's deposit key pool, `{"kind": "public_keys"}`): one JSON line in, one out, each
  connection in its own thread and within READ_DEADLINE seconds (an idle or slow client holds only its
  own connection). Every request is checked against the database (chains.evm.policy) before
  anything is signed; the addresses it pays are derived from the seed, never taken from the database.
- Web and workers reach it with `EVM_SIGNER=unix:/run/kassa/signer.sock` (`SocketSigner`). In development
  and tests, `EVM_SIGNER=local` signs in-process with the public development seed through the same
  checks (`LocalSigner`); production refuses it.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

from bip_utils import Bip32Secp256k1, Bip39MnemonicValidator, Bip39SeedGenerator
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from django.db import close_old_connections, connections
from eth_account import Account
from web3 import Web3
from web3.exceptions import TransactionNotFound

from chains.base import PayoutHeld, PayoutRefused, SignedTx, Signer, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC, derive_address, derive_internal_address
from chains.evm.config import evm_config
from chains.evm.node import coin
from chains.evm.policy import Approved, SignRefused, check
from chains.signers import open_journal, signer_location
from core.money import number_text

logger = logging.getLogger(__name__)

ACCOUNT_PATH = "m/44'/60'/0'"
SCRYPT_N = 2**15
MAX_REQUEST = 64 * 1024
MAX_KEYS_ANSWER = 128 * 1024  # an answer of public keys: 1000 of them in hex, quoted, is about 67 KiB
READ_DEADLINE = 5.0  # seconds a connection has to send its request line


class SignerUnavailable(PayoutHeld):
    """The signer process could not be asked (not running, socket missing, no answer): payouts wait with
    the reason shown, and an alert."""

    kind = "signer_unavailable"
    reason = "The EVM signer cannot be reached"


# --- the sealed seed -----------------------------------------------------------------------------------


def seal(mnemonic: str, passphrase: str) -> bytes:
    if not Bip39MnemonicValidator().IsValid(mnemonic):
        raise ValueError("not a valid BIP-39 mnemonic")
    if len(passphrase) < 12:
        raise ValueError("the passphrase has at least 12 characters")
    salt, nonce = os.urandom(16), os.urandom(12)
    key = Scrypt(salt=salt, length=32, n=SCRYPT_N, r=8, p=1).derive(passphrase.encode())
    sealed = AESGCM(key).encrypt(nonce, mnemonic.encode(), b"kassa-evm-seed")
    blob = {"kdf": "scrypt", "n": SCRYPT_N, "salt": salt.hex(), "nonce": nonce.hex(), "sealed": sealed.hex()}
    return json.dumps(blob).encode()


def unseal(blob: bytes, passphrase: str) -> str:
    try:
        fields = json.loads(blob)
        key = Scrypt(salt=bytes.fromhex(fields["salt"]), length=32, n=int(fields["n"]), r=8, p=1).derive(
            passphrase.encode()
        )
        return (
            AESGCM(key)
            .decrypt(bytes.fromhex(fields["nonce"]), bytes.fromhex(fields["sealed"]), b"kassa-evm-seed")
            .decode()
        )
    except Exception as exc:
        raise ValueError(
            "the seed file cannot be opened with this passphrase (or is not a seed file)"
        ) from exc


# --- signing ----------------------------------------------------------------------------------------


class SignerJournal:
    """What the signer has signed, in its own file: the database says what may be signed, but the web and
    the workers can write the database, so what was signed is kept where they cannot reach.

    One nonce per request: a withdrawal, sweep or top-up signed once may be signed again only with the same
    nonce (a replacement with higher fees, of which at most one can be mined); never a second transaction
    that could pay it again. And per code and UTC day, each withdrawal or top-up counted once (at the most
    any of its signatures moves): the payouts within the code's `daily_limit`, the gas top-ups within its
    `topup_daily_limit`. The file survives a restart of the signer, and the limits with it."""

    def __init__(self, path: str = ":memory:") -> None:
        self._db = open_journal(
            path,
            "CREATE TABLE IF NOT EXISTS signed (purpose TEXT NOT NULL, ref TEXT NOT NULL, code TEXT NOT NULL,"
            " nonce INTEGER NOT NULL, amount TEXT NOT NULL, day TEXT NOT NULL, txid TEXT NOT NULL,"
            " PRIMARY KEY (purpose, ref))",
        )
        self.lock = threading.Lock()

    def admit(self, approved: Approved) -> None:
        """Refuse what the journal forbids (call under `lock`, then `record` what was signed)."""
        known = self._known(approved)
        if known is not None and known[0] != approved.tx["nonce"] and not _dead(approved, known[0], known[1]):
            raise SignRefused(
                f"{approved.ref} was signed already with nonce {known[0]}: only a replacement with that "
                "nonce, or a new nonce once another transaction has used that one"
            )
        # What this signature may move beyond what the ref's earlier ones could (at most one is mined).
        more = approved.amount - (known[2] if known is not None else Decimal(0))
        if approved.daily_limit is not None and more > 0:
            rows = self._db.execute(
                "SELECT amount FROM signed WHERE purpose = ? AND code = ? AND day = ?",
                (approved.purpose, approved.code, _today()),
            )
            total = sum((Decimal(amount) for (amount,) in rows), more)
            if total > approved.daily_limit:
                what = "of gas top-ups" if approved.purpose == "topup" else approved.code
                limit = "topup_daily_limit" if approved.purpose == "topup" else "daily limit"
                raise SignRefused(
                    f"{number_text(total)} {what} today is over the {limit} "
                    f"{number_text(approved.daily_limit)} of {approved.code}"
                )

    def record(self, approved: Approved, txid: str) -> None:
        known = self._known(approved)
        amount = max(approved.amount, known[2]) if known is not None else approved.amount
        self._db.execute(
            "INSERT INTO signed (purpose, ref, code, nonce, amount, day, txid) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (purpose, ref) DO UPDATE SET txid = excluded.txid, nonce = excluded.nonce,"
            " amount = excluded.amount",
            (
                approved.purpose,
                approved.ref,
                approved.code,
                approved.tx["nonce"],
                str(amount),
                _today(),
                txid,
            ),
        )

    def _known(self, approved: Approved) -> tuple[int, str, Decimal] | None:
        """The nonce, txid and amount recorded for the request's ref, if it was signed before."""
        row = self._db.execute(
            "SELECT nonce, txid, amount FROM signed WHERE purpose = ? AND ref = ?",
            (approved.purpose, approved.ref),
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), Decimal(row[2]))


def _dead(approved: Approved, nonce: int, txid: str) -> bool:
    """The earlier signature (`txid`, `nonce`) can never be mined: not mined itself, and another
    transaction of the sender already used its nonce on chain (a plan that lost its nonce to another).
    Asked of the node; a node that cannot be asked means no."""
    from chains.backend import get_backend

    try:
        w3 = get_backend(approved.code).w3(approved.code)  # type: ignore[attr-defined]
        if w3.eth.get_transaction_count(approved.sender, "latest") <= nonce:
            return False
        try:
            w3.eth.get_transaction_receipt(txid)
        except TransactionNotFound:
            return True
        return False
    except Exception:
        logger.warning("signer: the node could not tell whether %s is dead; refused", txid)
        return False


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


class LocalSigner:
    """Signs in this process with `mnemonic`, after the same checks as the signer process, keeping what it
    signed in `journal` (the process's own file; in memory for development and tests)."""

    def __init__(self, mnemonic: str, journal: SignerJournal | None = None) -> None:
        self._account = Bip32Secp256k1.FromSeedAndPath(Bip39SeedGenerator(mnemonic).Generate(), ACCOUNT_PATH)
        self._keys: dict[tuple[int, int], Any] = {}
        self.journal = journal or SignerJournal()

    def address(self, chain: int, index: int) -> str:
        return str(self._key(chain, index).address)

    def hot_address(self) -> str:
        return self.address(1, 0)

    def _key(self, chain: int, index: int) -> Any:
        if (chain, index) not in self._keys:
            node = self._account.ChildKey(chain).ChildKey(index)
            self._keys[(chain, index)] = Account.from_key(node.PrivateKey().Raw().ToBytes())
        return self._keys[(chain, index)]

    def matches_configuration(self) -> bool:
        """The seed is the one behind CHAIN_XPUBS["evm"]: its hot and first deposit addresses agree."""
        return (
            self.address(1, 0) == derive_internal_address("evm", 0)
            and self.address(0, 0) == derive_address("eth", 0)[0]
        )

    def sign(self, tx: UnsignedTx) -> SignedTx:
        approved = check(tx.code, tx.payload, own=self.address)
        key = self._key(approved.chain, approved.index)
        with self.journal.lock:
            self.journal.admit(approved)
            signed = key.sign_transaction(approved.tx)
            txid = Web3.to_hex(signed.hash)
            self.journal.record(approved, txid)
        fee = _max_fee(approved.tx)  # what the signed transaction can pay at most, whatever was asked
        return SignedTx(
            txid=txid,
            raw=Web3.to_hex(signed.raw_transaction),
            fee=fee,
            sender=key.address,
            nonce=approved.tx["nonce"],
            chain=evm_config(tx.code).chain,
        )


def _max_fee(tx: dict[str, Any]) -> Decimal:
    return coin(tx["gas"] * tx["maxFeePerGas"])


class SocketSigner:
    """Asks the signer process over its Unix socket; its refusal is `refused` (the family's SignRefused:
    each family's socket signer is this one with its own), its absence SignerUnavailable. One process signs
    every family (chains.signers)."""

    refused: type[PayoutRefused] = SignRefused

    def __init__(self, path: str) -> None:
        self.path = path

    def sign(self, tx: UnsignedTx) -> SignedTx:
        request = {"code": tx.code, "payload": tx.payload, "fee": str(tx.fee)}
        answer = self.ask(request)
        if "error" in answer:
            raise self.refused(str(answer["error"]))
        nonce = answer.get("nonce")
        return SignedTx(
            txid=str(answer["txid"]),
            raw=str(answer["raw"]),
            fee=Decimal(str(answer["fee"])),
            sender=str(answer["sender"]),
            nonce=None if nonce is None else int(nonce),
            chain=str(answer.get("chain") or ""),
        )

    def public_keys(self, code: str, start: int, count: int) -> list[str]:
        """The public keys the signer process exports of the code's deposit keys start .. start+count-1
        (NEAR's key pool); refused by a family that exports none."""
        request = {"kind": "public_keys", "code": code, "start": start, "count": count}
        answer = self.ask(request, MAX_KEYS_ANSWER)
        if "error" in answer:
            raise self.refused(str(answer["error"]))
        found = answer.get("keys")
        if not isinstance(found, list) or not all(isinstance(key, str) for key in found):
            raise self.refused("the signer answered no list of public keys")
        return found

    def ask(self, request: dict[str, Any], limit: int = MAX_REQUEST) -> dict[str, Any]:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(30)
                conn.connect(self.path)
                conn.sendall(json.dumps(request).encode() + b"\n")
                data = conn.makefile("rb").readline(limit)
        except OSError as exc:
            raise SignerUnavailable(f"{self.path}: {exc.strerror or exc}") from exc
        if not data:
            raise SignerUnavailable(f"{self.path}: the connection closed without an answer")
        return dict(json.loads(data))


def seed_signer(mnemonic: str, journal: str = ":memory:") -> LocalSigner:
    """The signer process's EVM signer of `mnemonic`, its journal at `journal` (chains.signers)."""
    return LocalSigner(mnemonic, SignerJournal(journal))


@cache
def get_signer() -> LocalSigner | SocketSigner:
    path = signer_location()
    return LocalSigner(DEVELOPMENT_MNEMONIC) if path is None else SocketSigner(path)


# --- the signer process ------------------------------------------------------------------------------


def answer(signer: Signer, line: bytes) -> dict[str, Any]:
    """One request in, one answer out; never raises (a bad request is an error answer)."""
    close_old_connections()
    try:
        request = json.loads(line)
        if isinstance(request, dict) and request.get("kind") == "public_keys":
            return _public_keys(signer, request)
        code, payload = str(request["code"]), str(request["payload"])
        fee = Decimal(str(request.get("fee", "0")))
    except (ValueError, KeyError, TypeError, InvalidOperation):
        return {"error": "a request is one JSON object with code and payload"}
    try:
        signed = signer.sign(UnsignedTx(code=code, payload=payload, payments=(), fee=fee))
    except PayoutRefused as exc:  # any family's signer refuses with the reason (chains.signers)
        logger.warning("signer: refused a %s request: %s", code, exc)
        return {"error": str(exc)}
    except Exception:
        logger.exception("signer: a %s request failed", code)
        return {"error": "the signer could not sign this request"}
    logger.info("signer: signed %s %s nonce %s from %s", code, signed.txid, signed.nonce, signed.sender)
    return {
        "txid": signed.txid,
        "raw": signed.raw,
        "fee": str(signed.fee),
        "sender": signed.sender,
        "nonce": signed.nonce,
        "chain": signed.chain,
    }


def _public_keys(signer: Signer, request: dict[str, Any]) -> dict[str, Any]:
    """A request for the public keys of deposit keys (chains.signers.SeedSigner.public_keys)."""
    code, start, count = request.get("code"), request.get("start"), request.get("count")
    if not isinstance(code, str) or not all(
        isinstance(value, int) and not isinstance(value, bool) for value in (start, count)
    ):
        return {"error": "a public_keys request is one JSON object with code, start and count"}
    export = getattr(signer, "public_keys", None)
    if export is None:
        return {"error": "this signer exports no public keys"}
    try:
        found = export(code, start, count)
    except PayoutRefused as exc:
        logger.warning("signer: refused %s public keys: %s", code, exc)
        return {"error": str(exc)}
    except Exception:
        logger.exception("signer: %s public keys failed", code)
        return {"error": "the signer could not export these public keys"}
    logger.info("signer: exported %s %s public keys from index %s", len(found), code, start)
    return {"keys": list(found)}


def serve(signer: Signer, path: str, *, ready: Any = None, deadline: float = READ_DEADLINE) -> None:
    """Answer on the Unix socket at `path` (mode 0660: the signer's user and the workers' group) until
    interrupted. Each connection is served in its own thread and must send its request line within
    `deadline` seconds, else it is closed unanswered: an idle or slow client never holds up another's
    request. Signing itself is one at a time (the journal's lock: limits are checked against what was
    signed)."""
    target = Path(path)
    if target.exists():
        target.unlink()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            try:
                line = _read_line(self.request, deadline)
            except (TimeoutError, OSError) as exc:
                logger.warning("signer: a connection sent no request within %ss; closed (%s)", deadline, exc)
                return
            try:
                self.request.settimeout(deadline)
                self.request.sendall(json.dumps(answer(signer, line)).encode() + b"\n")
            except OSError as exc:
                logger.warning("signer: an answer could not be sent: %s", exc)
            finally:
                connections.close_all()  # this thread's database connection ends with it

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True  # a stop never waits for a client

    with Server(path, Handler) as server:
        os.chmod(path, 0o660)
        logger.info("signer: listening on %s", path)
        if ready is not None:
            ready(server)
        server.serve_forever()


def _read_line(conn: socket.socket, deadline: float) -> bytes:
    """One request line (at most MAX_REQUEST bytes), read within `deadline` seconds in all; TimeoutError
    after that, however slowly the client trickles its bytes."""
    end, data = time.monotonic() + deadline, b""
    while b"\n" not in data and len(data) < MAX_REQUEST:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the read deadline passed")
        conn.settimeout(left)
        chunk = conn.recv(MAX_REQUEST - len(data))
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0]
