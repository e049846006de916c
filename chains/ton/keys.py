"""The house's TON wallet: a wallet v4R2 (workchain 0, wallet id 698983191, as every wallet app makes it)
whose ed25519 public key is `CHAIN_XPUBS["ton"]`, written as 64 hexadecimal characters (what @ton/crypto's
`keyPair.publicKey.toString("hex")` and the wallet's own `get_public_key` give). Every TON payment goes to
its address; each invoice and static address is told apart by its comment (chains.ton.backend).

The address is shown non-bounceable (`UQ…`): until its first payout the wallet is not deployed, and a
bounceable payment to an undeployed wallet comes back to the sender.

With no key configured, the development key is used: the SLIP-10 ed25519 key m/44'/607'/0' of the public
test mnemonic (chains.derivation.DEVELOPMENT_MNEMONIC), whose wallet is the sandbox's TON address.
ANYONE CAN SPEND WHAT IS SENT THERE; production refuses it (kassa.E005).
"""

from __future__ import annotations

import functools
import logging
import re

from bip_utils import Bip32Slip10Ed25519, Bip39SeedGenerator, Ed25519PublicKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from pytoniq_core import Address

from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.ton.wallet import DEFAULT_WALLET_ID, wallet_v4r2_address

logger = logging.getLogger(__name__)

SETTING = 'CHAIN_XPUBS["ton"]'
DEVELOPMENT_PATH = "m/44'/607'/0'"
_HEX = re.compile(r"[0-9a-fA-F]+")


@functools.cache
def development_public_key() -> bytes:
    seed = Bip39SeedGenerator(DEVELOPMENT_MNEMONIC).Generate()
    key = Bip32Slip10Ed25519.FromSeedAndPath(seed, DEVELOPMENT_PATH).PublicKey()
    return bytes(key.RawCompressed().ToBytes()[1:])  # bip-utils keeps 0x00 + the 32 bytes


def configured_public_key() -> bytes | None:
    """`CHAIN_XPUBS["ton"]` as 32 bytes, None when it is not set; ImproperlyConfigured when it is not a
    public key (the text is never echoed: a pasted private key must not reach a log)."""
    keys = settings.CHAIN_XPUBS or {}
    value = keys.get("ton") if isinstance(keys, dict) else None
    if value is None or value == "":
        return None
    return _parse(value)


def _parse(value: object) -> bytes:
    text = value.strip() if isinstance(value, str) else ""
    if not _HEX.fullmatch(text):
        raise ImproperlyConfigured(
            f"{SETTING} is the house wallet's ed25519 public key as 64 hexadecimal characters"
        )
    if len(text) == 128:
        raise ImproperlyConfigured(
            f"{SETTING} holds 64 bytes: an ed25519 secret key, not the public key. Kassa never holds private "
            "keys: configure the 32-byte public key, and treat this secret key as leaked."
        )
    if len(text) != 64:
        raise ImproperlyConfigured(f"{SETTING} is 64 hexadecimal characters (32 bytes), not {len(text)}")
    key = bytes.fromhex(text)
    if not Ed25519PublicKey.IsValidBytes(key):
        raise ImproperlyConfigured(f"{SETTING} is not an ed25519 public key (not a point of the curve)")
    return key


def house_public_key() -> bytes:
    key = configured_public_key()
    if key is None:
        _warn_development_key()
        return development_public_key()
    return key


def house_address() -> Address:
    return _address(house_public_key())


@functools.lru_cache(maxsize=8)
def _address(public_key: bytes) -> Address:
    return wallet_v4r2_address(public_key, DEFAULT_WALLET_ID, 0)


def house_display(address: Address | None = None) -> str:
    """The house address as wallets are shown it: user-friendly, URL-safe, non-bounceable (`UQ…`)."""
    found = address or house_address()
    return str(found.to_str(is_user_friendly=True, is_url_safe=True, is_bounceable=False))


def house_raw() -> str:
    """`0:<hex>`, the spelling chains.ton.messages and routing use."""
    found = house_address()
    return f"{found.wc}:{found.hash_part.hex()}"


def receives_on_development_key() -> bool:
    """Deposits go where anyone can spend them: no key configured, or the development key configured."""
    return house_public_key() == development_public_key()


@functools.cache
def _warn_development_key() -> None:
    logger.warning(
        "No TON house key configured: the ton backend receives on the PUBLIC development key's wallet. "
        "Anyone can take funds sent there; development only. Set %s for real money.",
        SETTING,
    )
