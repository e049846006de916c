"""Withdrawal address validation per payment code (docs/decisions.md).

Mainnet, except for btc, ltc and bch on a node configured for testnet or regtest (`CHAIN_NODES`): then
that network's forms only (tb1/bcrt1, tltc1/rltc1, bchtest:/bchreg:, base58 versions 0x6f and 0xc4, and
Litecoin's 0x3a), and the mainnet forms are refused, so a mainnet address never reaches a test node.

`validate_address(code, address)` returns the form to store and send to, or raises `InvalidAddress`;
an unknown code raises `UnsupportedAsset` (from `get_asset`). Checks dispatch on `asset.family`.

Rulings where the chains leave a choice (each pinned by tests/test_addresses.py):
- Whitespace around the input is stripped; anything else that is not printable ASCII (inner spaces,
  control characters, lookalike Unicode) is refused. Over 128 characters is refused before decoding.
- btc: P2PKH `1…`, P2SH `3…`, and segwit `bc1…` limited to what can be spent today: v0 with a 20-byte
  (P2WPKH) or 32-byte (P2WSH) program, bech32 checksum; v1 with a 32-byte program (P2TR), bech32m
  checksum. Other witness versions and lengths are valid BIP-350 strings but unencumbered on chain
  (anyone can spend them), so they are refused. bech32 is stored lowercase (BIP-173's canonical output;
  all-uppercase is only the QR-code form); base58 is stored as given.
- ltc: `L…` P2PKH, `M…` P2SH, `ltc1…` with the btc segwit rules. The deprecated `3…` P2SH form is
  refused: it is byte-for-byte a Bitcoin P2SH address, so a BTC address pasted into an ltc withdrawal
  would pass; the owner can give the same script as `M…`.
- bch: CashAddr only, P2PKH (`q…`) and P2SH (`p…`) with 20-byte hashes, with or without the
  `bitcoincash:` prefix, all-lowercase or all-uppercase; stored lowercase with the prefix. Legacy
  base58 (`1…`/`3…`) is refused: it cannot be told apart from a Bitcoin address, which is what CashAddr
  exists to prevent. Token-aware (`z…`/`r…`) and 32-byte P2SH32 forms are refused (not in our wallets).
- evm (eth, usdterc20, usdc, bnb): `0x` + 40 hex. Mixed case must pass EIP-55; all-lowercase and
  all-uppercase carry no checksum and are accepted, as EIP-55 itself specifies. Stored as given.
- tron (trx, trc20usdt): base58check of 0x41 + 20 bytes (34 characters, `T…`). Stored as given.
- ton: user-friendly (48 characters, base64 or base64url, not both; CRC16 checked; bounceable or
  non-bounceable; test-only refused) and raw `0:`/`-1:` + 64 hex; workchains 0 and -1 only in both.
  User-friendly is stored as given (its bounce flag matters to the sender); raw hex is lowercased.
- sol: base58 decoding to exactly 32 bytes. No on-curve check: program-derived addresses (multisig
  vaults, token accounts) are deliberately off the curve and valid destinations. Stored as given.
- near: account IDs per the protocol (2-64 characters, `a-z 0-9` in parts joined by one `_` or `-`,
  parts separated by `.`). `.testnet` accounts are refused. A 64-hex ID is an implicit account, which
  the chain creates on transfer from the ID read as an ed25519 key: an ID off the curve would lock the
  funds for ever, so it is refused. ETH-implicit IDs (`0x` + 40 lowercase hex, NEP-518, live on
  mainnet) are accepted: they are valid account IDs, and the holder of that Ethereum key controls them.
  Stored as given.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable

from bip_utils import (
    Base58Decoder,
    BchP2PKHAddrDecoder,
    BchP2SHAddrDecoder,
    CoinsConf,
    EthAddrDecoder,
    NearAddrDecoder,
    P2PKHAddrDecoder,
    P2SHAddrDecoder,
    SegwitBech32Decoder,
)
from bip_utils.base58 import Base58ChecksumError
from bip_utils.bech32 import Bech32ChecksumError
from pytoniq_core import Address as TonAddress
from pytoniq_core.boc.address import AddressError as TonAddressError

from chains.nodes import network
from chains.tron import address as tron_address
from core.assets import get_asset

MAX_LENGTH = 128  # longest real form is a 74-character bech32; base58 decoding is quadratic in length

# What the decoders raise on bad input; checksum errors do not derive from ValueError.
_DECODE_ERRORS = (ValueError, Bech32ChecksumError, Base58ChecksumError, TonAddressError)


class InvalidAddress(ValueError):
    """Not a valid mainnet address for the payment code; the message reads "not a valid btc address"."""

    code = "invalid_address"


def validate_address(code: str, address: str) -> str:
    """The form of `address` to store for payment `code`; raises InvalidAddress or UnsupportedAsset."""
    asset = get_asset(code)
    candidate = address.strip() if isinstance(address, str) else ""
    net = network(asset.code)
    try:
        return _valid_form(asset.family, net, candidate)
    except _DECODE_ERRORS as exc:
        raise InvalidAddress(
            f"not a valid {asset.code}{'' if net == 'mainnet' else ' ' + net} address"
        ) from exc


@functools.lru_cache(maxsize=4096)
def _valid_form(family: str, net: str, candidate: str) -> str:
    """The family's check, remembered for the addresses a merchant pays again and again (a bech32 decode
    costs more than the rest of the item's checks). Only a valid address is remembered: an exception is not
    cached. `net` is in the key because the family's check reads the network from the settings itself."""
    if not _is_plain(candidate):
        raise ValueError("empty, too long, or not printable ASCII")
    return _BY_FAMILY[family](candidate)


def is_valid_address(code: str, address: str) -> bool:
    """Whether `address` is valid for `code`; an unknown code still raises UnsupportedAsset."""
    try:
        validate_address(code, address)
    except InvalidAddress:
        return False
    return True


def _is_plain(text: str) -> bool:
    return 0 < len(text) <= MAX_LENGTH and all("!" <= char <= "~" for char in text)


def _is_single_case(text: str) -> bool:
    return text == text.lower() or text == text.upper()


# --- Bitcoin and Litecoin -----------------------------------------------------------------------------

# Witness version -> program lengths a wallet can spend today (P2WPKH, P2WSH; P2TR).
_SEGWIT_PROGRAM_LENGTHS = {0: (20, 32), 1: (32,)}


def _base58_or_segwit(address: str, *, p2pkh_ver: bytes, p2sh_ver: bytes, hrp: str) -> str:
    if address[: len(hrp) + 1].lower() == f"{hrp}1":
        # The decoder checks bech32 for v0 and bech32m for v1+, so a checksum of the other kind fails here.
        version, program = SegwitBech32Decoder.Decode(hrp, address)
        if len(program) not in _SEGWIT_PROGRAM_LENGTHS.get(version, ()):
            raise ValueError(f"witness v{version} with a {len(program)}-byte program is not spendable")
        return address.lower()
    try:
        P2PKHAddrDecoder.DecodeAddr(address, net_ver=p2pkh_ver)
    except ValueError:
        P2SHAddrDecoder.DecodeAddr(address, net_ver=p2sh_ver)
    return address


# Test networks: one set of base58 versions (P2PKH 0x6f; P2SH 0xc4, Litecoin's own 0x3a) and the hrp.
_TEST_P2PKH, _TEST_P2SH, _LTC_TEST_P2SH = b"\x6f", b"\xc4", b"\x3a"
_TEST_HRPS = {("btc", "testnet"): "tb", ("btc", "regtest"): "bcrt", ("ltc", "testnet"): "tltc"}
_TEST_HRPS[("ltc", "regtest")] = "rltc"


def _on_test_network(family: str, address: str, net: str) -> str:
    hrp = _TEST_HRPS[(family, net)]
    p2sh = _LTC_TEST_P2SH if family == "ltc" else _TEST_P2SH
    return _base58_or_segwit(address, p2pkh_ver=_TEST_P2PKH, p2sh_ver=p2sh, hrp=hrp)


def _btc(address: str) -> str:
    if (net := network("btc")) != "mainnet":
        return _on_test_network("btc", address, net)
    conf = CoinsConf.BitcoinMainNet
    return _base58_or_segwit(
        address,
        p2pkh_ver=conf.ParamByKey("p2pkh_net_ver"),
        p2sh_ver=conf.ParamByKey("p2sh_net_ver"),
        hrp=conf.ParamByKey("p2wpkh_hrp"),
    )


def _ltc(address: str) -> str:
    if (net := network("ltc")) != "mainnet":
        return _on_test_network("ltc", address, net)
    conf = CoinsConf.LitecoinMainNet
    return _base58_or_segwit(
        address,
        p2pkh_ver=conf.ParamByKey("p2pkh_std_net_ver"),
        p2sh_ver=conf.ParamByKey("p2sh_std_net_ver"),  # `M…`; the deprecated `3…` is refused (see top)
        hrp=conf.ParamByKey("p2wpkh_hrp"),
    )


# --- Bitcoin Cash -------------------------------------------------------------------------------------


BCH_PREFIXES = {"mainnet": "bitcoincash", "testnet": "bchtest", "regtest": "bchreg"}


def _bch(address: str) -> str:
    conf = CoinsConf.BitcoinCashMainNet  # the CashAddr version bytes are the same on every network
    hrp = BCH_PREFIXES[network("bch")]
    if not _is_single_case(address):
        raise ValueError("mixed case")
    prefix, colon, payload = address.lower().rpartition(":")
    if colon and prefix != hrp:  # bchtest:, bchreg:, or anything else
        raise ValueError(f"prefix {prefix!r}")
    full = f"{hrp}:{payload}"
    try:
        BchP2PKHAddrDecoder.DecodeAddr(full, hrp=hrp, net_ver=conf.ParamByKey("p2pkh_std_net_ver"))
    except ValueError:
        BchP2SHAddrDecoder.DecodeAddr(full, hrp=hrp, net_ver=conf.ParamByKey("p2sh_std_net_ver"))
    return full


# --- EVM and TRON -------------------------------------------------------------------------------------

_EVM_RE = re.compile(r"0x[0-9a-fA-F]{40}")


def _evm(address: str) -> str:
    if not _EVM_RE.fullmatch(address):
        raise ValueError("not 0x + 40 hex")
    # EIP-55: a single-case address carries no checksum; mixed case must be exactly the checksum casing.
    EthAddrDecoder.DecodeAddr(address, skip_chksum_enc=_is_single_case(address[2:]))
    return address


def _tron(address: str) -> str:
    return tron_address.validate(address)  # base58check of 0x41 + 20 bytes (chains.tron.address)


# --- TON ----------------------------------------------------------------------------------------------

_TON_RAW_RE = re.compile(r"(0|-1):[0-9a-fA-F]{64}")
_TON_FRIENDLY_RE = re.compile(r"[A-Za-z0-9_-]{48}|[A-Za-z0-9+/]{48}")  # one alphabet or the other
_TON_TAGS = (0x11, 0x51)  # bounceable, non-bounceable
_TON_WORKCHAINS = (0, -1)


def _ton(address: str) -> str:
    if _TON_RAW_RE.fullmatch(address):
        TonAddress(address)
        return address.lower()
    if not _TON_FRIENDLY_RE.fullmatch(address):
        raise ValueError("neither raw nor a 48-character user-friendly address")
    # pytoniq checks the CRC16 but accepts any tag byte and any workchain, so both are checked here.
    parsed = TonAddress(address)
    tag = base64.urlsafe_b64decode(address.replace("+", "-").replace("/", "_"))[0]
    if parsed.is_test_only:
        raise ValueError("test-only address")
    if tag not in _TON_TAGS:
        raise ValueError(f"unknown tag {tag:#x}")
    if parsed.wc not in _TON_WORKCHAINS:
        raise ValueError(f"workchain {parsed.wc}")
    return address


# --- Solana and NEAR ----------------------------------------------------------------------------------


def _sol(address: str) -> str:
    if len(Base58Decoder.Decode(address)) != 32:
        raise ValueError("not 32 bytes")
    return address


# NEAR account ID rules (nearcore `AccountId`): parts of [a-z0-9] joined by single `_`/`-`, split by `.`.
_NEAR_ACCOUNT_RE = re.compile(r"(([a-z\d]+[-_])*[a-z\d]+\.)*([a-z\d]+[-_])*[a-z\d]+")
_NEAR_IMPLICIT_RE = re.compile(r"[0-9a-f]{64}")


def _near(address: str) -> str:
    if not (2 <= len(address) <= 64 and _NEAR_ACCOUNT_RE.fullmatch(address)):
        raise ValueError("not a NEAR account ID")
    if address.endswith(".testnet"):
        raise ValueError("testnet account")
    if _NEAR_IMPLICIT_RE.fullmatch(address):
        NearAddrDecoder.DecodeAddr(address)  # the ed25519 key the chain will read from the ID
    return address


_BY_FAMILY: dict[str, Callable[[str], str]] = {
    "btc": _btc,
    "ltc": _ltc,
    "bch": _bch,
    "evm": _evm,
    "tron": _tron,
    "ton": _ton,
    "sol": _sol,
    "near": _near,
}


# --- routing --------------------------------------------------------------------------------------------


def route_key(code: str, address: str) -> str:
    """One spelling per destination, to match a transfer to its deposit address whatever form it came in:
    EVM addresses in any case (nodes report them lowercase), TON in any of its forms (raw, bounceable or not,
    base64 or base64url). Other families' valid forms are already unique. Invalid text is kept as given: a
    transfer to it is recorded unrouted, never dropped."""
    try:
        canonical = validate_address(code, address)
    except InvalidAddress:
        return address.strip() if isinstance(address, str) else ""
    one_form = _ROUTE_FORMS.get(get_asset(code).family)
    return canonical if one_form is None else one_form(canonical)


def _ton_raw(address: str) -> str:
    parsed = TonAddress(address)
    return f"{parsed.wc}:{parsed.hash_part.hex()}"


# The families whose valid addresses have more than one spelling, and the one routing uses.
_ROUTE_FORMS: dict[str, Callable[[str], str]] = {"evm": str.lower, "ton": _ton_raw}
