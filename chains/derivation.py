"""Deposit addresses derived from extended public keys (docs/architecture.md).

`derive_address(code, index)` is pure: the allocation model hands out the indexes, this module turns one
into `(address, tag)`. The service never holds a private key: spending is done elsewhere, by whoever
holds the seed behind the configured public keys.

Settings, read at call time:
- `CHAIN_XPUBS`: network family -> account-level extended public key, the key a wallet exports for an
  account (BIP-44 m/purpose'/coin'/account'). Addresses are its external chain, child 0 then child
  `index` (non-hardened), exactly the receiving addresses the wallet itself shows.
    btc   P2WPKH bc1q...                       zpub or xpub (BIP-84 m/84'/0'/0')
    ltc   P2WPKH ltc1q...                      zpub, Ltub or xpub (BIP-84 m/84'/2'/0')
    bch   cashaddr P2PKH bitcoincash:q...      xpub (BIP-44 m/44'/145'/0')
    evm   EIP-55 0x... for eth, usdterc20,     xpub (BIP-44 m/44'/60'/0')
          usdc and bnb
    tron  base58 T...                          xpub (BIP-44 m/44'/195'/0')
    sol   base58 ed25519 public key            Kholaw xpub (see below)
    near  implicit account: 64 lowercase hex   Kholaw xpub (see below)
  The four EVM codes share one key, so an index gives the same 0x address on each; that is fine because
  allocation keeps (address, tag) unique across codes, so an address is never handed out twice.
- `CHAIN_XPUBS["ton"]` is not read here: it is the ton backend's house wallet key (chains.ton.keys).
- `TON_DEPOSIT_ADDRESS` (the sandbox's TON): TON has no public derivation worth the name (an address is a
  wallet contract), so every TON deposit goes to this one address and the tag tells invoices apart:
  `ton_comment(index)`, the index's decimal digits and a Damm check digit, which any wallet's comment field
  carries. An incoming comment matches when it equals the tag once surrounding whitespace is stripped; one
  mistyped digit or two swapped neighbours never name another invoice (the check digit fails), so such a
  payment is unrouted, not credited to someone else's invoice.

Ed25519 (sol, near): SLIP-10, what Phantom, Solflare and NEAR wallets use, has hardened derivation only,
so no public key can produce child addresses. Khovratovich-Law BIP32-Ed25519 (bip-utils'
`Bip32KholawEd25519`, the scheme Cardano wallets use) does derive non-hardened children from a public
key, and its children are ordinary ed25519 public keys, valid as Solana addresses and NEAR implicit
accounts. So the sol and near families take a Kholaw extended public key, made offline from the seed
with bip-utils:
`Bip32KholawEd25519.FromSeedAndPath(seed, "m/44'/501'/0'").PublicKey().ToExtended()` (near: 397').
A Kholaw child's private key is a raw scalar, not an RFC 8032 seed, so spending needs a Kholaw-capable
signer (one that signs with the extended key, as Cardano tooling does); an ordinary Solana or NEAR wallet
imported from the same mnemonic will not see these addresses. This is the sandbox's scheme only: the
solana backend receives on one address and tells deposits apart by reference (chains.solana.keys), and the
near backend gives each deposit an implicit account from the signer's SLIP-10 key pool, whose public keys
the signer exports (chains.near.pool); neither reads a Kholaw key.

Development keys: a family with no configured key uses the account key of the public BIP-39 test mnemonic
below at the path in the table (Kholaw m/44'/501'/0' and m/44'/397'/0' for sol and near), and TON uses the
wallet v4r2 of that mnemonic's SLIP-10 key m/44'/607'/0'. Sandbox addresses are thus real, valid
addresses, and ANYONE CAN SPEND WHAT IS SENT TO THEM: the mnemonic is public. Sandbox only; a warning is
logged the first time each family falls back, and `uses_development_key` lets a real backend refuse.
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from bip_utils import (
    BchP2PKHAddrEncoder,
    Bip32KeyError,
    Bip32KeyNetVersions,
    Bip32KholawEd25519,
    Bip32PublicKey,
    Bip32Secp256k1,
    Bip39SeedGenerator,
    EthAddrEncoder,
    NearAddrEncoder,
    P2WPKHAddrEncoder,
    SolAddrEncoder,
)
from bip_utils.base58 import Base58ChecksumError, Base58Decoder
from bip_utils.bip.bip32 import Bip32Base
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from pytoniq_core import Address
from pytoniq_core.crypto.crc import crc16
from stdnum import damm

from chains.nodes import network
from chains.tron import address as tron_address
from core.assets import get_asset

logger = logging.getLogger(__name__)

# The BIP-39 test mnemonic (no passphrase): published in every BIP-39 test suite, so never private.
DEVELOPMENT_MNEMONIC = (
    "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
)
# Wallet v4r2, non-bounceable (an undeployed wallet must not bounce its first deposit), of the
# DEVELOPMENT_MNEMONIC's SLIP-10 ed25519 key m/44'/607'/0'; the test suite recomputes it.
DEVELOPMENT_TON_ADDRESS = "UQAzWZa6nM5mJev91wGc7VCSfBoIsYRqKJpV78N8Add9-RKY"

MAX_INDEX = 2**31 - 1  # above this an index would be hardened, which a public key cannot derive

_XPUB = Bip32KeyNetVersions(b"\x04\x88\xb2\x1e", b"\x04\x88\xad\xe4")
_ZPUB = Bip32KeyNetVersions(b"\x04\xb2\x47\x46", b"\x04\xb2\x43\x0c")
_LTUB = Bip32KeyNetVersions(b"\x01\x9d\xa4\x62", b"\x01\x9d\x9c\xfe")
_KHOLAW_XPUB = Bip32KeyNetVersions(b"\x04\x88\xb2\x1e", b"\x0f\x43\x31\xd4")
# Private versions that get their own message: xprv, zprv, yprv, Ltpv, Kholaw xprv, tprv, vprv.
_PRIVATE_VERSIONS = frozenset(
    bytes.fromhex(h)
    for h in ("0488ade4", "04b2430c", "049d7878", "019d9cfe", "0f4331d4", "04358394", "045f18bc")
)
_SERIALIZED_PUBLIC_KEY_LEN = 78


def _p2wpkh(hrp: str) -> Callable[[Bip32PublicKey], str]:
    return lambda key: P2WPKHAddrEncoder.EncodeKey(key.KeyObject(), hrp=hrp)


def _bch(prefix: str) -> Callable[[Bip32PublicKey], str]:
    return lambda key: BchP2PKHAddrEncoder.EncodeKey(key.KeyObject(), hrp=prefix, net_ver=b"\x00")


def _evm(key: Bip32PublicKey) -> str:
    return EthAddrEncoder.EncodeKey(key.KeyObject())  # EIP-55 checksummed


def _tron(key: Bip32PublicKey) -> str:
    return tron_address.from_public_key(key.RawUncompressed().ToBytes())


def _ed25519_bytes(key: Bip32PublicKey) -> bytes:
    # bip-utils keeps ed25519 keys as 0x00 + 32 bytes; the chains use the bare 32.
    return key.RawCompressed().ToBytes()[1:]


def _sol(key: Bip32PublicKey) -> str:
    return SolAddrEncoder.EncodeKey(_ed25519_bytes(key))


def _near(key: Bip32PublicKey) -> str:
    return NearAddrEncoder.EncodeKey(_ed25519_bytes(key))


@dataclass(frozen=True)
class _Family:
    bip32: type[Bip32Base]
    development_path: str
    versions: tuple[tuple[str, Bip32KeyNetVersions], ...]  # accepted public prefixes; the first is exported
    encode: Callable[[Bip32PublicKey], str]


_SECP = Bip32Secp256k1
_FAMILIES: dict[str, _Family] = {
    "btc": _Family(_SECP, "m/84'/0'/0'", (("zpub", _ZPUB), ("xpub", _XPUB)), _p2wpkh("bc")),
    "ltc": _Family(_SECP, "m/84'/2'/0'", (("zpub", _ZPUB), ("Ltub", _LTUB), ("xpub", _XPUB)), _p2wpkh("ltc")),
    "bch": _Family(_SECP, "m/44'/145'/0'", (("xpub", _XPUB),), _bch("bitcoincash")),
    "evm": _Family(_SECP, "m/44'/60'/0'", (("xpub", _XPUB),), _evm),
    "tron": _Family(_SECP, "m/44'/195'/0'", (("xpub", _XPUB),), _tron),
    "sol": _Family(Bip32KholawEd25519, "m/44'/501'/0'", (("xpub", _KHOLAW_XPUB),), _sol),
    "near": _Family(Bip32KholawEd25519, "m/44'/397'/0'", (("xpub", _KHOLAW_XPUB),), _near),
}
FAMILIES: tuple[str, ...] = (*_FAMILIES, "ton")

# btc, ltc and bch on a test network (their node's `network` in CHAIN_NODES): testnet account keys
# (tpub, vpub), coin type 1 for the development key, and the network's address encoding.
_TPUB = Bip32KeyNetVersions(b"\x04\x35\x87\xcf", b"\x04\x35\x83\x94")
_VPUB = Bip32KeyNetVersions(b"\x04\x5f\x1c\xf6", b"\x04\x5f\x18\xbc")
_TEST_VERSIONS = (("tpub", _TPUB), ("vpub", _VPUB))
_TEST_FAMILIES: dict[tuple[str, str], _Family] = {
    ("btc", "testnet"): _Family(_SECP, "m/84'/1'/0'", _TEST_VERSIONS, _p2wpkh("tb")),
    ("btc", "regtest"): _Family(_SECP, "m/84'/1'/0'", _TEST_VERSIONS, _p2wpkh("bcrt")),
    ("ltc", "testnet"): _Family(_SECP, "m/84'/1'/0'", _TEST_VERSIONS, _p2wpkh("tltc")),
    ("ltc", "regtest"): _Family(_SECP, "m/84'/1'/0'", _TEST_VERSIONS, _p2wpkh("rltc")),
    ("bch", "testnet"): _Family(_SECP, "m/44'/1'/0'", _TEST_VERSIONS, _bch("bchtest")),
    ("bch", "regtest"): _Family(_SECP, "m/44'/1'/0'", _TEST_VERSIONS, _bch("bchreg")),
}


def _spec(family: str) -> tuple[_Family, str]:
    """The family's parameters on its configured network, and that network."""
    net = network(family) if family in ("btc", "ltc", "bch") else "mainnet"
    return (_FAMILIES[family] if net == "mainnet" else _TEST_FAMILIES[(family, net)]), net


def derive_address(code: str, index: int) -> tuple[str, str | None]:
    """The deposit `(address, tag)` number `index` of payment code `code`; tag is None except on TON.

    Deterministic: the same code, index and settings always give the same pair. Raises UnsupportedAsset
    for an unknown code, ValueError for an index outside 0..MAX_INDEX, and ImproperlyConfigured for a
    malformed CHAIN_XPUBS or TON_DEPOSIT_ADDRESS.
    """
    family = get_asset(code).family
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= MAX_INDEX:
        raise ValueError(f"A deposit index must be an int in 0..{MAX_INDEX}, not {index!r}.")
    if family == "ton":
        return ton_deposit_address(), ton_comment(index)
    spec, net = _spec(family)
    receiving = _receiving_chain(family, net, _account_key(family))
    return spec.encode(receiving.ChildKey(index).PublicKey()), None


def derive_internal_address(family: str, index: int) -> str:
    """Address `index` of the account key's internal chain (child 1), never a deposit address: the EVM
    hot address (payouts leave from it, sweeps arrive at it, gas top-ups come from it) is index 0."""
    spec, net = _spec(family)
    return spec.encode(_receiving_chain(family, net, _account_key(family), 1).ChildKey(index).PublicKey())


def ton_comment(index: int) -> str:
    """The comment of TON deposit `index`: its decimal digits and their Damm check digit (`57` -> `577`). The
    check digit catches every single mistyped digit and every swap of two neighbours, so a customer's typo
    is an unknown comment (unrouted), never another invoice's. Comments handed out before the check digit
    (bare digits) stay routable: a new comment is always longer than any index handed out before it."""
    digits = str(index)
    return digits + damm.calc_check_digit(digits)


def ton_deposit_address() -> str:
    """The one TON deposit address: TON_DEPOSIT_ADDRESS in user-friendly form, or the development one."""
    configured = settings.TON_DEPOSIT_ADDRESS
    if configured is None or configured == "":
        _warn_development_key("ton")
        return _ton_user_friendly(DEVELOPMENT_TON_ADDRESS)
    if not isinstance(configured, str):
        raise ImproperlyConfigured("TON_DEPOSIT_ADDRESS must be a string.")
    return _ton_user_friendly(configured)


def uses_development_key(family: str) -> bool:
    """Whether `family` (btc ... near, ton) falls back to the public development key or TON address."""
    if family == "ton":
        return settings.TON_DEPOSIT_ADDRESS in (None, "")
    _require_family(family)
    return not _configured_keys().get(family)


def receives_on_development_key(family: str) -> bool:
    """Whether deposits of `family` go where anyone can spend them: the development key or TON address,
    by fallback or because the configured one is that very key (e.g. an xpub copied from a tutorial).

    Raises ImproperlyConfigured for a malformed CHAIN_XPUBS entry or TON_DEPOSIT_ADDRESS.
    """
    if uses_development_key(family):
        return True
    if family == "ton":
        return _ton_raw(ton_deposit_address()) == _ton_raw(DEVELOPMENT_TON_ADDRESS)
    net = _spec(family)[1]
    configured = _receiving_chain(family, net, _account_key(family)).PublicKey().RawCompressed()
    development = _receiving_chain(family, net, development_xpub(family)).PublicKey().RawCompressed()
    return configured.ToBytes() == development.ToBytes()


def _ton_raw(address: str) -> str:
    return Address(address).to_str(is_user_friendly=False)


def development_xpub(family: str) -> str:
    """The account-level public key of DEVELOPMENT_MNEMONIC for `family` (not ton) on its configured
    network, e.g. the BIP-84 zpub on mainnet, the tpub of m/84'/1'/0' on regtest."""
    _require_family(family)
    return _development_xpub(family, _spec(family)[1])


@functools.cache
def _development_xpub(family: str, net: str) -> str:
    spec = _FAMILIES[family] if net == "mainnet" else _TEST_FAMILIES[(family, net)]
    node = spec.bip32.FromSeedAndPath(_development_seed(), spec.development_path, spec.versions[0][1])
    return node.PublicKey().ToExtended()


def _require_family(family: str) -> _Family:
    spec = _FAMILIES.get(family)
    if spec is None:
        raise ValueError(f"{family!r} is not a key-derived network family; families: {sorted(_FAMILIES)}.")
    return spec


@functools.cache
def _development_seed() -> bytes:
    return Bip39SeedGenerator(DEVELOPMENT_MNEMONIC).Generate()


@functools.cache
def _warn_development_key(family: str) -> None:
    logger.warning(
        "No deposit key configured for the %s family: using the PUBLIC development key. Anyone can take "
        "funds sent to these addresses; sandbox only. Set %s for real money.",
        family,
        "TON_DEPOSIT_ADDRESS" if family == "ton" else f"CHAIN_XPUBS[{family!r}]",
    )


def _configured_keys() -> dict[str, str]:
    keys = settings.CHAIN_XPUBS or {}
    if not isinstance(keys, dict):
        raise ImproperlyConfigured("CHAIN_XPUBS must be a dict of network family -> extended public key.")
    # A typo ("eth" for "evm") must not quietly leave that family on the public development key.
    unknown = sorted(str(family) for family in keys if family not in FAMILIES)
    if unknown:
        raise ImproperlyConfigured(
            f"CHAIN_XPUBS: unknown network family {', '.join(map(repr, unknown))}; families are "
            f"{', '.join(FAMILIES)} (eth, usdterc20, usdc and bnb share 'evm'; trx and trc20usdt "
            "share 'tron'; 'ton' is the ton backend's house wallet key, the sandbox's TON takes "
            "TON_DEPOSIT_ADDRESS)."
        )
    return keys


def _account_key(family: str) -> str:
    key = _configured_keys().get(family)
    if key is None or key == "":
        _warn_development_key(family)
        return development_xpub(family)
    if not isinstance(key, str):
        raise ImproperlyConfigured(f"CHAIN_XPUBS[{family!r}] must be a string.")
    return key.strip()


@functools.lru_cache(maxsize=32)
def _receiving_chain(family: str, net: str, key: str, chain: int = 0) -> Bip32Base:
    """The external chain (child 0; `chain=1` the internal one) of `key`; keyed by network and key: a
    settings change is a new entry."""
    spec = _FAMILIES[family] if net == "mainnet" else _TEST_FAMILIES[(family, net)]
    where = f"CHAIN_XPUBS[{family!r}]"
    expected = " or ".join(name for name, _ in spec.versions)
    try:
        payload = Base58Decoder.CheckDecode(key)
    except (Base58ChecksumError, ValueError) as exc:
        raise ImproperlyConfigured(f"{where} is not a base58check extended key (typo?).") from exc
    version = payload[:4]
    # Never echo the key: a pasted private key must not end up in logs or error reports.
    if version in _PRIVATE_VERSIONS or len(payload) != _SERIALIZED_PUBLIC_KEY_LEN:
        raise ImproperlyConfigured(
            f"{where} is not an extended public key ({expected}). Kassa never holds private keys: "
            "configure the account's public key, and if a private key was pasted here, treat it as leaked."
        )
    net_versions = next((v for _, v in spec.versions if v.Public() == version), None)
    if net_versions is None:
        raise ImproperlyConfigured(
            f"{where} must be a {net} {expected} (the {family} node's network), not version {version.hex()}."
        )
    try:
        account = spec.bip32.FromExtendedKey(key, net_versions)
        return account.ChildKey(chain)
    except Bip32KeyError as exc:
        curve = "a Kholaw ed25519" if spec.bip32 is Bip32KholawEd25519 else "a secp256k1"
        raise ImproperlyConfigured(f"{where} is not {curve} extended public key: {exc}") from exc


_TON_RAW = re.compile(r"0:[0-9a-fA-F]{64}")
_TON_USER_FRIENDLY = re.compile(r"[A-Za-z0-9_-]{48}|[A-Za-z0-9+/]{48}")
_TON_BOUNCEABLE, _TON_NON_BOUNCEABLE, _TON_TESTNET_FLAG = 0x11, 0x51, 0x80


@functools.lru_cache(maxsize=8)
def _ton_user_friendly(text: str) -> str:
    """`text` as a mainnet basechain user-friendly URL-safe address; raw `0:<hex>` becomes non-bounceable."""
    text = text.strip()
    if _TON_RAW.fullmatch(text):
        return Address(text).to_str(is_user_friendly=True, is_url_safe=True, is_bounceable=False)
    if not _TON_USER_FRIENDLY.fullmatch(text):
        raise ImproperlyConfigured(
            "TON_DEPOSIT_ADDRESS is not a TON address (48 base64 characters or 0:<hex>)."
        )
    try:
        data = base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
    except binascii.Error as exc:
        raise ImproperlyConfigured("TON_DEPOSIT_ADDRESS is not valid base64.") from exc
    flags, workchain = data[0], data[1]
    if data[34:] != crc16(data[:34]):
        raise ImproperlyConfigured("TON_DEPOSIT_ADDRESS has a bad checksum (typo?).")
    if flags & _TON_TESTNET_FLAG:
        raise ImproperlyConfigured("TON_DEPOSIT_ADDRESS is a testnet-only address.")
    if flags not in (_TON_BOUNCEABLE, _TON_NON_BOUNCEABLE):
        raise ImproperlyConfigured("TON_DEPOSIT_ADDRESS has unknown address flags.")
    if workchain != 0:
        raise ImproperlyConfigured("TON_DEPOSIT_ADDRESS must be in the basechain (workchain 0).")
    is_bounceable = flags == _TON_BOUNCEABLE  # the operator's choice: EQ for a deployed wallet is fine
    return Address(text).to_str(is_user_friendly=True, is_url_safe=True, is_bounceable=is_bounceable)
