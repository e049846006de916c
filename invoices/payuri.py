"""Payment URIs and their QR codes for the pay page: what a wallet needs to pay an invoice in one scan.

Per payment code (the chains' own standards where they exist):
    btc        bitcoin:<address>?amount=<BTC>                                  BIP 21
    ltc        litecoin:<address>?amount=<LTC>                                 BIP 21
    bch        bitcoincash:<cashaddr body>?amount=<BCH>                        BIP 21 (cashaddr: prefix once)
    eth        ethereum:<address>@1?value=<wei>                                EIP-681, chain id 1
    bnb        ethereum:<address>@56?value=<wei>                               EIP-681, BNB Smart Chain
    usdterc20  ethereum:<USDT contract>@1/transfer?address=<to>&uint256=<base units>   EIP-681 ERC-20 call
    usdc       ethereum:<USDC contract>@1/transfer?address=<to>&uint256=<base units>
    (a code on the evm backend: its configured chain id, token contract and decimals instead)
    sol        solana:<address>?amount=<SOL>                                   Solana Pay transfer request
    ton        ton://transfer/<address>?amount=<nanotons>&text=<tag>           TON transfer link
    trx, trc20usdt, near: the bare address / account id. TRON and NEAR have no payment URI that wallets
               agree on, so the QR carries what every wallet's scanner accepts and the amount is typed.

Amounts are Decimals all the way: base units are computed by an exact power-of-ten shift, never a float,
and written as plain integers (no exponent); decimal amounts are written without exponent or trailing zeros.
"""

from __future__ import annotations

from decimal import ROUND_UP, Decimal, localcontext
from urllib.parse import quote

import segno
from web3 import Web3

from chains.base import get_backend
from chains.evm.config import evm_config
from core.assets import get_asset
from core.money import MONEY_CONTEXT, number_text

# Mainnet ERC-20 contracts of the token codes (Ethereum, chain id 1).
ERC20_CONTRACTS: dict[str, str] = {
    "usdterc20": "0xdAC17F958D2ee523a2206206994597C13D831ec7",
    "usdc": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
}
EVM_CHAIN_IDS: dict[str, int] = {"eth": 1, "usdterc20": 1, "usdc": 1, "bnb": 56}
_BIP21_SCHEMES: dict[str, str] = {"btc": "bitcoin", "ltc": "litecoin", "bch": "bitcoincash"}
# Codes whose QR holds the bare address: no URI standard their wallets share.
BARE_ADDRESS_CODES = frozenset({"trx", "trc20usdt", "near"})


def base_units(amount: Decimal, decimals: int) -> int:
    """`amount` in the chain's smallest unit (wei, nanoton, ...), exactly.

    An amount with more places than the chain has is rounded UP to the next unit: the merchant is never
    short (amounts due are already rounded to display decimals, which never exceed the chain's).
    """
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"Not a payable amount: {amount!r}")
    with localcontext(MONEY_CONTEXT):
        shifted = amount.scaleb(decimals)  # exact: only the exponent changes
        return int(shifted.to_integral_value(rounding=ROUND_UP))


def _evm_target(code: str) -> tuple[int, str | None, int]:
    """(chain id, token contract or None, decimals) a wallet pays `code` on: the configured node's when the
    code runs on the evm backend (a test network, another token deployment), else mainnet's."""
    if get_backend(code).name == "evm":
        config = evm_config(code)
        contract = None if config.contract is None else Web3.to_checksum_address(config.contract)
        return config.chain_id, contract, config.decimals
    return EVM_CHAIN_IDS[code], ERC20_CONTRACTS.get(code), get_asset(code).chain_decimals


def payment_uri(code: str, *, address: str, amount: Decimal, tag: str | None = None) -> str:
    """The URI a wallet opens to pay `amount` of `code` to `address` (and `tag`, TON)."""
    asset = get_asset(code)
    code = asset.code
    if code in _BIP21_SCHEMES:
        scheme = _BIP21_SCHEMES[code]
        body = address
        if body.lower().startswith(f"{scheme}:"):
            body = body.split(":", 1)[1]  # cashaddr is stored with its prefix; a URI must not repeat it
        return f"{scheme}:{body}?amount={number_text(amount)}"
    if code in EVM_CHAIN_IDS:
        chain_id, contract, decimals = _evm_target(code)
        if contract is None:
            return f"ethereum:{address}@{chain_id}?value={base_units(amount, decimals)}"
        units = base_units(amount, decimals)
        return f"ethereum:{contract}@{chain_id}/transfer?address={address}&uint256={units}"
    if code == "sol":
        return f"solana:{address}?amount={number_text(amount)}"
    if code == "ton":
        uri = f"ton://transfer/{address}?amount={base_units(amount, asset.chain_decimals)}"
        return f"{uri}&text={quote(tag, safe='')}" if tag else uri
    if code in BARE_ADDRESS_CODES:
        return address
    raise ValueError(f"No payment URI rule for {code!r}")  # a new code must be added here on purpose


def carries_amount(code: str) -> bool:
    """Whether the QR of `code` tells the wallet the amount (else the client types it)."""
    return get_asset(code).code not in BARE_ADDRESS_CODES


def make_qr(content: str) -> segno.QRCode:
    # Medium error correction: survives a scratched phone screen or glare, still a small symbol for
    # the longest URI (an ERC-20 transfer, ~130 characters).
    return segno.make(content, error="m", micro=False)


def qr_svg(content: str, *, title: str) -> str:
    """Inline SVG of the QR code: scales with CSS (viewBox, no fixed size), dark on white, quiet zone kept."""
    svg: str = make_qr(content).svg_inline(
        scale=1,
        border=4,
        dark="#000",
        light="#fff",
        omitsize=True,
        svgclass="qr-code",
        title=title,
    )
    return svg.replace("<svg ", '<svg role="img" focusable="false" ', 1)
