"""The Solana receiving address and the per-deposit Solana Pay references.

- The receiving (hot) address is `CHAIN_XPUBS["sol"]` on the solana backend: the base58 ed25519 public key
  of the wallet that receives every payment (Solana has no public derivation that ordinary wallets
  follow, so deposits are told apart by reference, not by address). Unset, it is the development key:
  DEVELOPMENT_MNEMONIC's SLIP-10 key m/44'/501'/0'/0' (what Phantom and Solflare derive for the first
  account), which ANYONE CAN SPEND: production refuses it (kassa.E005).
- A reference is 32 bytes in base58 (any 32 bytes is a valid reference key: it need not be on the curve):
  an HMAC-SHA256 of the deposit's derivation index under SECRET_KEY. Indexes never repeat, so neither do
  references; without the secret, nobody can tell the next one.
"""

from __future__ import annotations

import functools

from bip_utils import Bip32Slip10Ed25519, Bip39SeedGenerator
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.crypto import salted_hmac
from solders.pubkey import Pubkey

from chains.derivation import DEVELOPMENT_MNEMONIC

FAMILY = "sol"
DEVELOPMENT_PATH = "m/44'/501'/0'/0'"
_WHERE = 'CHAIN_XPUBS["sol"]'
_REFERENCE_SALT = "kassa.chains.solana.reference"


def receiving_address() -> str:
    """The configured receiving address, or the public development one when none is configured."""
    configured = (settings.CHAIN_XPUBS or {}).get(FAMILY)
    if configured in (None, ""):
        return development_address()
    return public_key(configured)


def uses_development_key() -> bool:
    """Deposits go where anyone can spend them: no key configured, or the development key itself."""
    return receiving_address() == development_address()


def public_key(text: object) -> str:
    """`text` as a wallet's base58 ed25519 public key; ImproperlyConfigured naming the key to fix."""
    if not isinstance(text, str):
        raise ImproperlyConfigured(f"{_WHERE} must be a string: the receiving wallet's base58 public key.")
    text = text.strip()
    if text.startswith("xpub"):
        raise ImproperlyConfigured(
            f"{_WHERE} is an extended key: on the solana backend it is the receiving wallet's address, "
            "a base58 ed25519 public key (32 bytes), as the wallet shows it."
        )
    try:
        key = Pubkey.from_string(text)
    except ValueError:
        # Never echoed: a pasted private key must not reach logs or error reports.
        raise ImproperlyConfigured(
            f"{_WHERE} is not a Solana address (a base58 ed25519 public key of 32 bytes). If a private "
            "key was pasted here, treat it as leaked."
        ) from None
    if not key.is_on_curve():
        raise ImproperlyConfigured(
            f"{_WHERE} is not a wallet's key (it is off the ed25519 curve: a program-derived address "
            "cannot sign for the payouts)."
        )
    return str(key)


@functools.cache
def development_address() -> str:
    seed = Bip39SeedGenerator(DEVELOPMENT_MNEMONIC).Generate()
    key = Bip32Slip10Ed25519.FromSeedAndPath(seed, DEVELOPMENT_PATH).PublicKey()
    return str(Pubkey(key.RawCompressed().ToBytes()[1:]))  # bip-utils writes 0x00 + the 32 bytes


def reference(index: int) -> str:
    """The Solana Pay reference of deposit address number `index`: 32 secret-derived bytes in base58."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"a deposit index is a non-negative int, not {index!r}")
    return str(Pubkey(salted_hmac(_REFERENCE_SALT, str(index), algorithm="sha256").digest()))
