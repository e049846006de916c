"""The devnet's controls (`POST /devnet/<name>` with a JSON object, `GET /devnet/info`,
`GET /devnet/balance/<account_id>`): accounts, the faucet's transfers (plain, through the pay.devnet
contract, failing), a "system" refund, and block production (produce, skip heights, carry a shard's chunk
over, finalize). None is a NEAR method; a client under test never needs them. The faucet's transactions
are real signed transactions (the devnet's own test key), accepted as `send_tx` accepts one."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

from tests.near_devnet import borsh, runtime
from tests.near_devnet.borsh import Action, b58decode, key_text
from tests.near_devnet.chain import Chain
from tests.near_devnet.errors import RpcError
from tests.near_devnet.model import (
    CONTRACT,
    FAUCET,
    FINALITY_DEPTH,
    GENESIS_HEIGHT,
    SHARD_BOUNDARY,
    SHARDS,
    STORAGE_PRICE,
    is_implicit,
    receipt_id_for,
    shard_of,
)

Control = Callable[[Chain, dict[str, Any]], Any]
CONTROLS: dict[str, Control] = {}
CALL_GAS = 30_000_000_000_000
MAX_FINALIZE = 64


class Refused(ValueError):
    """The chain refused a control's transaction: HTTP 400 with nearcore's error object."""

    def __init__(self, error: RpcError) -> None:
        super().__init__(json.dumps(error.to_json()))


C = TypeVar("C", bound=Control)


def control(name: str) -> Callable[[C], C]:
    def register(handler: C) -> C:
        CONTROLS[name] = handler
        return handler

    return register


def _amount(fields: dict[str, Any], name: str, default: int | None = None) -> int:
    value = fields.get(name, default)
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} is a whole number (yoctoNEAR amounts may be decimal strings)")
    return value


def _account_id(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} is an account id")
    return value


def _send(chain: Chain, signer_id: str, receiver_id: str, actions: list[Action]) -> str:
    signer = chain.accounts.get(signer_id)
    keys = [key for key in (signer.keys if signer else {}) if key in chain.keyring]
    if not keys:
        raise ValueError(f"the devnet holds no key of {signer_id}")
    nonce = chain.next_nonce(signer_id, keys[0])
    body = borsh.encode_transaction(
        signer_id, keys[0], nonce, receiver_id, b58decode(chain.head.hash), actions
    )
    tx = borsh.decode_signed_transaction(borsh.encode_signed(body, chain.sign(keys[0], _hash(body))))
    try:
        return chain.accept(tx).tx.hash_b58
    except RpcError as exc:
        raise Refused(exc) from exc


def _hash(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()


@control("info")
def info(chain: Chain, fields: dict[str, Any] | None = None) -> Any:
    return {
        "faucet": FAUCET,
        "contract": CONTRACT,
        "genesis_height": GENESIS_HEIGHT,
        "head": {"height": chain.head.height, "hash": chain.head.hash},
        "final": {"height": chain.final.height, "hash": chain.final.hash},
        "finality_depth": FINALITY_DEPTH,
        "gas_price": str(chain.gas_price),
        "validity": chain.validity,
        "shards": list(SHARDS),
        "shard_boundary": SHARD_BOUNDARY,
        "storage_price_per_byte": str(STORAGE_PRICE),
        "implicit_account_storage_cost": str(182 * STORAGE_PRICE),
        "pending": {"transactions": len(chain.pool), "receipts": len(chain.pending)},
    }


def balance(chain: Chain, account_id: str) -> Any:
    account = chain.head.state.get(account_id)
    return {
        "account_id": account_id,
        "exists": account is not None,
        "amount": str(account.amount if account else 0),
        "shard_id": shard_of(account_id),
    }


@control("account")
def account(chain: Chain, fields: dict[str, Any]) -> Any:
    """A named or implicit account as if in genesis: it is in every block's state already."""
    account_id = _account_id(fields, "account_id")
    if account_id in chain.accounts or account_id == "system":
        raise ValueError(f"{account_id} exists")
    hex_key = fields.get("public_key")
    public_key = bytes.fromhex(hex_key) if isinstance(hex_key, str) else None
    if public_key is not None and len(public_key) != 32:
        raise ValueError("public_key is 32 bytes in hex")
    if is_implicit(account_id) and public_key not in (None, bytes.fromhex(account_id)):
        raise ValueError("an implicit account's key is its id")
    key = chain.new_account(account_id, _amount(fields, "balance", 0), public_key=public_key)
    for block in chain.blocks:
        block.state[account_id] = chain.accounts[account_id].copy()
    return {"account_id": account_id, "public_key": key_text(key), "shard_id": shard_of(account_id)}


@control("transfer")
def transfer(chain: Chain, fields: dict[str, Any]) -> Any:
    sender = fields.get("from") or FAUCET
    actions = [Action("Transfer", deposit=_amount(fields, "amount"))]
    return {"tx_hash": _send(chain, sender, _account_id(fields, "to"), actions)}


@control("contract_transfer")
def contract_transfer(chain: Chain, fields: dict[str, Any]) -> Any:
    """The faucet calls pay.devnet's `pay`; `delay` blocks after that call runs, pay.devnet's receipt
    transfers the deposit to `to`. receipt_id names that transfer receipt."""
    to, amount, delay = _account_id(fields, "to"), _amount(fields, "amount"), _amount(fields, "delay", 2)
    args = json.dumps({"to": to, "delay": max(1, delay)}).encode()
    call = Action("FunctionCall", method_name="pay", args=args, gas=CALL_GAS, deposit=amount)
    tx_hash = _send(chain, FAUCET, CONTRACT, [call])
    return {"tx_hash": tx_hash, "receipt_id": receipt_id_for(receipt_id_for(tx_hash), 0)}


@control("failing_transfer")
def failing_transfer(chain: Chain, fields: dict[str, Any]) -> Any:
    """A faucet transaction to `to` with [Transfer, FunctionCall]: no contract there, so its receipt fails
    (CodeDoesNotExist, or AccountDoesNotExist for an account not yet created) and "system" refunds it."""
    to, amount = _account_id(fields, "to"), _amount(fields, "amount")
    call = Action("FunctionCall", method_name="pay", args=b"{}", gas=CALL_GAS, deposit=0)
    tx_hash = _send(chain, FAUCET, to, [Action("Transfer", deposit=amount), call])
    return {"tx_hash": tx_hash, "receipt_id": receipt_id_for(tx_hash)}


@control("system_refund")
def system_refund(chain: Chain, fields: dict[str, Any]) -> Any:
    to, amount = _account_id(fields, "to"), _amount(fields, "amount")
    receipt = runtime.refund(chain, None, 0, to, amount, chain.head)
    chain.add_receipt(receipt)
    return {"receipt_id": receipt.receipt_id}


def _blocks(made: list[Any]) -> Any:
    return {
        "heights": [block.height for block in made],
        "head": {"height": made[-1].height, "hash": made[-1].hash} if made else None,
    }


@control("produce")
def produce(chain: Chain, fields: dict[str, Any]) -> Any:
    return _blocks(chain.produce(_amount(fields, "blocks", 1)))


@control("skip")
def skip(chain: Chain, fields: dict[str, Any]) -> Any:
    chain.skip_next += _amount(fields, "heights", 1)
    return {"next_height": chain.head.height + 1 + chain.skip_next}


@control("carry_over")
def carry_over(chain: Chain, fields: dict[str, Any]) -> Any:
    shard_id = _amount(fields, "shard_id")
    if shard_id not in SHARDS:
        raise ValueError(f"shard_id is one of {list(SHARDS)}")
    chain.carry_next.add(shard_id)
    return {"carried_over": sorted(chain.carry_next)}


@control("finalize")
def finalize(chain: Chain, fields: dict[str, Any]) -> Any:
    """Produce blocks until every transaction and receipt sent so far is executed in a final block."""
    made = chain.produce(1)
    while not chain.settled():
        if len(made) >= MAX_FINALIZE:
            raise ValueError(f"not settled after {MAX_FINALIZE} blocks")
        made += chain.produce(1)
    return _blocks(made)
