"""Payment URI builders: what a wallet opens to pay an amount to an address, per the chains' own standards.

Each backend picks its builder (`ChainBackend.payment_uri`); by default the asset's `uri_scheme` does:
    bitcoin, litecoin, bitcoincash   <scheme>:<address>?amount=<coin>                      BIP 21
    ethereum                         ethereum:<address>@<chain id>?value=<wei>             EIP-681
                                     ethereum:<contract>@<chain id>/transfer?address=<to>&uint256=<units>
    solana                           solana:<address>?amount=<coin>[&reference=<key>]      Solana Pay
    ton                              ton://transfer/<address>?amount=<nanotons>&text=<tag> TON transfer link
    "" (none)                        the bare address: no URI standard its wallets share

Amounts are Decimals all the way: base units are computed by an exact power-of-ten shift, never a float,
and written as plain integers (no exponent); decimal amounts are written without exponent or trailing zeros.
"""

from __future__ import annotations

from decimal import ROUND_UP, Decimal, localcontext
from urllib.parse import quote

from core.assets import Asset
from core.money import MONEY_CONTEXT, number_text

BIP21_SCHEMES = frozenset({"bitcoin", "litecoin", "bitcoincash"})


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


def bip21(scheme: str, address: str, amount: Decimal) -> str:
    body = address
    if body.lower().startswith(f"{scheme}:"):
        body = body.split(":", 1)[1]  # cashaddr is stored with its prefix; a URI must not repeat it
    return f"{scheme}:{body}?amount={number_text(amount)}"


def eip681(address: str, amount: Decimal, *, chain_id: int, contract: str | None, decimals: int) -> str:
    """A native transfer, or an ERC-20 `transfer` call of `contract` (checksummed) when there is one."""
    units = base_units(amount, decimals)
    if contract is None:
        return f"ethereum:{address}@{chain_id}?value={units}"
    return f"ethereum:{contract}@{chain_id}/transfer?address={address}&uint256={units}"


def solana_pay(address: str, amount: Decimal, *, reference: str | None = None) -> str:
    uri = f"solana:{address}?amount={number_text(amount)}"
    return f"{uri}&reference={reference}" if reference else uri  # base58: nothing to escape


def ton_transfer(address: str, amount: Decimal, tag: str | None, decimals: int) -> str:
    uri = f"ton://transfer/{address}?amount={base_units(amount, decimals)}"
    return f"{uri}&text={quote(tag, safe='')}" if tag else uri


def asset_payment_uri(asset: Asset, address: str, amount: Decimal, tag: str | None) -> str:
    """The URI of the asset's own standard, on its mainnet (chain id and token contract of the asset)."""
    scheme = asset.uri_scheme
    if scheme in BIP21_SCHEMES:
        return bip21(scheme, address, amount)
    if scheme == "ethereum" and asset.chain_id is not None:
        contract = asset.contract or None
        return eip681(
            address, amount, chain_id=asset.chain_id, contract=contract, decimals=asset.chain_decimals
        )
    if scheme == "solana":
        return solana_pay(address, amount)
    if scheme == "ton":
        return ton_transfer(address, amount, tag, asset.chain_decimals)
    if scheme == "":
        return address
    raise ValueError(f"No payment URI rule for {asset.code!r}")  # a new scheme must be added here on purpose
