"""The devnet's controls (`POST /devnet/<name>` with a JSON object, `GET /devnet/info`): produce slots,
fund an address from the faucet, and have the customer pay as a Solana Pay wallet does. None is a Solana
method; a client under test never needs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bip_utils import Base58Encoder
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from tests.solana_devnet import node, wallet
from tests.solana_devnet.node import Devnet, Dropped

Control = Callable[[Devnet, dict[str, Any]], Any]
CONTROLS: dict[str, Control] = {}


def control(name: str) -> Callable[[Control], Control]:
    def register(handler: Control) -> Control:
        CONTROLS[name] = handler
        return handler

    return register


def _whole(fields: dict[str, Any], name: str, default: int | None = None) -> int:
    value = fields.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} is a whole number of lamports or slots")
    return value


def _key(text: Any, name: str) -> Pubkey:
    if not isinstance(text, str):
        raise ValueError(f"{name} is a base58 address")
    return Pubkey.from_string(text)


def _account(key: Keypair) -> dict[str, str]:
    return {"address": str(key.pubkey()), "secret_key": Base58Encoder.Encode(bytes(key))}


@control("info")
def info(devnet: Devnet, fields: dict[str, Any] | None = None) -> Any:
    """The devnet's accounts (with their secret keys: test keys only) and its clock."""
    return {
        "faucet": _account(devnet.faucet),
        "customer": _account(devnet.customer),
        "genesis_slot": node.GENESIS_SLOT,
        "genesis_height": node.GENESIS_HEIGHT,
        "head": devnet.head,
        "finalized": devnet.finalized_slot,
        "finality_depth": node.FINALITY_DEPTH,
        "max_processing_age": node.MAX_PROCESSING_AGE,
        "slot_ms": node.SLOT_MS,
        "memo_programs": {name: str(key) for name, key in wallet.MEMO_PROGRAMS.items()},
    }


@control("mine")
def mine(devnet: Devnet, fields: dict[str, Any]) -> Any:
    """Produce `slots` slots (default 1): the working bank's transactions are confirmed in the first."""
    slot = devnet.mine(_whole(fields, "slots", 1))
    return {
        "slot": slot.number,
        "height": slot.height,
        "blockhash": str(slot.blockhash),
        "blockTime": slot.time,
        "finalized": devnet.finalized_slot,
    }


def _sent(devnet: Devnet, transaction: Any) -> dict[str, Any]:
    signature = str(transaction.signatures[0])
    try:
        record = devnet.execute(transaction)
    except Dropped as dropped:
        return {"signature": signature, "landed": False, "err": dropped.err}
    return {"signature": signature, "landed": True, "slot": record.slot, "err": record.err}


@control("airdrop")
def airdrop(devnet: Devnet, fields: dict[str, Any]) -> Any:
    """The faucet sends `lamports` to `address`, in the working bank (mine to confirm it)."""
    to = _key(fields.get("address"), "address")
    blockhash, _ = devnet.latest_blockhash("processed")
    return _sent(devnet, wallet.payment(devnet.faucet, to, _whole(fields, "lamports"), blockhash))


@control("pay")
def pay(devnet: Devnet, fields: dict[str, Any]) -> Any:
    """The customer pays `lamports` to `to` as a Solana Pay wallet does: `references` (addresses) on the
    transfer, `memo` with `memo_program` ("v3", wallets' default, or "v1"), a v0 or "legacy" message,
    optional `compute_unit_price` (micro-lamports) and `compute_unit_limit`."""
    to = _key(fields.get("to"), "to")
    references = [_key(text, "references") for text in fields.get("references", [])]
    memo = fields.get("memo")
    if memo is not None and not isinstance(memo, str):
        raise ValueError("memo is text")
    program = wallet.MEMO_PROGRAMS[fields.get("memo_program", "v3")]
    price = fields.get("compute_unit_price")
    limit = fields.get("compute_unit_limit")
    blockhash, _ = devnet.latest_blockhash("processed")
    transaction = wallet.payment(
        devnet.customer,
        to,
        _whole(fields, "lamports"),
        blockhash,
        references=references,
        memo=memo,
        memo_program=program,
        compute_unit_price=None if price is None else _whole(fields, "compute_unit_price"),
        compute_unit_limit=None if limit is None else _whole(fields, "compute_unit_limit"),
        version=fields.get("version", 0),
    )
    return _sent(devnet, transaction)
