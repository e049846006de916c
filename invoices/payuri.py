"""Payment URIs and their QR codes for the pay page: what a wallet needs to pay an invoice in one scan.

The URI is the backend's (`ChainBackend.payment_uri`): by default the asset's own standard on its mainnet
(chains.payuri builds them), a configured chain's where the backend says so (the evm backend: its node's
chain id, token contract and decimals). Per payment code, by default:
    btc        bitcoin:<address>?amount=<BTC>                                  BIP 21
    ltc        litecoin:<address>?amount=<LTC>                                 BIP 21
    bch        bitcoincash:<cashaddr body>?amount=<BCH>                        BIP 21 (cashaddr: prefix once)
    eth        ethereum:<address>@1?value=<wei>                                EIP-681, chain id 1
    bnb        ethereum:<address>@56?value=<wei>                               EIP-681, BNB Smart Chain
    usdterc20  ethereum:<USDT contract>@1/transfer?address=<to>&uint256=<base units>   EIP-681 ERC-20 call
    usdc       ethereum:<USDC contract>@1/transfer?address=<to>&uint256=<base units>
    sol        solana:<address>?amount=<SOL>                                   Solana Pay transfer request
               (the solana backend: &reference=<the deposit's reference key>)
    ton        ton://transfer/<address>?amount=<nanotons>&text=<tag>           TON transfer link
    trx, trc20usdt, near: the bare address / account id. TRON and NEAR have no payment URI that wallets
               agree on, so the QR carries what every wallet's scanner accepts and the amount is typed.
"""

from __future__ import annotations

from decimal import Decimal

import segno

from chains.backend import TAG_REFERENCE, get_backend
from core.assets import get_asset


def payment_uri(code: str, *, address: str, amount: Decimal, tag: str | None = None) -> str:
    """The URI a wallet opens to pay `amount` of `code` to `address` (and `tag`, TON)."""
    code = get_asset(code).code
    return get_backend(code).payment_uri(code, address, amount, tag)


def typed_tag(code: str, tag: str) -> str:
    """The tag the client must type into the transfer ("" when none): a Solana Pay reference travels in
    the URI alone, and a wallet adds it, so the page never asks for it."""
    return "" if link_only(code) else tag


def link_only(code: str) -> bool:
    """Whether only the QR and the wallet link can pay an invoice of `code`: its tag (a Solana Pay
    reference) travels in the URI alone, so a transfer typed in by hand cannot be matched to the invoice."""
    return get_backend(get_asset(code).code).tag_kind == TAG_REFERENCE


def carries_amount(code: str) -> bool:
    """Whether the QR of `code` tells the wallet the amount (else the client types it)."""
    return get_asset(code).uri_scheme != ""


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
