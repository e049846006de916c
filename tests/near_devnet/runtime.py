"""Fees and receipt execution: a few fixed costs in place of nearcore's runtime.

Gas: the send and exec costs of nearcore's runtime config (core/parameters/res/runtime_configs/
parameters.yaml), taken as equal send/exec values: action receipt creation 108_059_500_000, Transfer
115_123_062_500, DeleteAccount 147_489_000_000, and for a Transfer to a NEAR-implicit account also
CreateAccount 3_850_000_000_000 + AddKey(full access) 101_765_125_000 (charged by the receiver id's form,
whether it exists or not, as nearcore). FunctionCall: 2_319_861_500_000 + 2_235_934 a byte of method name
and args; its prepaid gas is neither charged nor refunded (no gas-refund receipts anywhere). At the
transaction's conversion the signer pays send + exec fees; the transaction's outcome burns the send part,
the receipt's outcome the exec part. Gas price is fixed at 10^8 yocto a gas.

Storage: an account costs 100 bytes + 82 a full-access key (182 for an implicit account), at 10^19
yocto a byte. A receipt whose receiver ends below its storage cost fails with LackBalanceForState (index
null, amount = the shortfall)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tests.near_devnet.borsh import Action
from tests.near_devnet.model import (
    CONTRACT,
    NONCE_MULTIPLIER,
    STORAGE_PRICE,
    SYSTEM,
    Account,
    Block,
    Receipt,
    is_implicit,
    receipt_id_for,
    shard_of,
)

if TYPE_CHECKING:
    from tests.near_devnet.chain import Chain

GAS_PRICE = 100_000_000
RECEIPT_CREATION = 108_059_500_000
TRANSFER = 115_123_062_500
DELETE_ACCOUNT = 147_489_000_000
CREATE_ACCOUNT = 3_850_000_000_000
ADD_FULL_ACCESS_KEY = 101_765_125_000
FUNCTION_CALL = 2_319_861_500_000
FUNCTION_CALL_BYTE = 2_235_934
EMPTY_KEY = bytes(32)  # the signer key of nearcore's "system" receipts: ed25519:111...1


def fees(actions: tuple[Action, ...], signer_id: str, receiver_id: str) -> tuple[int, int]:
    """(send gas, exec gas) of a transaction's actions; nearcore's values, send == exec for each here."""
    gas = RECEIPT_CREATION
    for action in actions:
        if action.kind == "Transfer":
            gas += TRANSFER
            if is_implicit(receiver_id):
                gas += CREATE_ACCOUNT + ADD_FULL_ACCESS_KEY
        elif action.kind == "DeleteAccount":
            gas += DELETE_ACCOUNT
        else:
            gas += FUNCTION_CALL + FUNCTION_CALL_BYTE * (len(action.method_name) + len(action.args))
    return gas, gas


class _Failed(Exception):
    def __init__(self, index: int | None, kind: dict[str, Any]) -> None:
        self.index, self.kind = index, kind


def apply(chain: Chain, receipt: Receipt, block: Block) -> tuple[dict[str, Any], list[Receipt]]:
    """Run `receipt`'s actions at its receiver; (outcome status, new receipts). A failure reverts them
    all and refunds the deposits to the predecessor by a "system" receipt (none for a system receipt)."""
    try:
        return _run(chain, receipt, block)
    except _Failed as failure:
        children = []
        deposits = sum(action.deposit for action in receipt.actions)
        if deposits and receipt.predecessor_id != SYSTEM:
            children.append(refund(chain, receipt, 0, receipt.predecessor_id, deposits, block))
        return {"Failure": {"ActionError": {"index": failure.index, "kind": failure.kind}}}, children


def _run(chain: Chain, receipt: Receipt, block: Block) -> tuple[dict[str, Any], list[Receipt]]:
    receiver_id = receipt.receiver_id
    existing = chain.accounts.get(receiver_id)
    account = existing.copy() if existing is not None else None
    children: list[Receipt] = []
    status: dict[str, Any] = {"SuccessValue": ""}
    missing = {"AccountDoesNotExist": {"account_id": receiver_id}}
    for index, action in enumerate(receipt.actions):
        if action.kind == "Transfer":
            if account is None:
                if not (is_implicit(receiver_id) and len(receipt.actions) == 1):
                    raise _Failed(index, missing)
                key = bytes.fromhex(receiver_id)
                account = Account(0, {key: (block.height - 1) * NONCE_MULTIPLIER})
            account.amount += action.deposit
        elif action.kind == "DeleteAccount":
            if account is None:
                raise _Failed(index, missing)
            if receipt.predecessor_id != receiver_id:
                raise _Failed(
                    index,
                    {"ActorNoPermission": {"account_id": receiver_id, "actor_id": receipt.predecessor_id}},
                )
            children.append(
                refund(chain, receipt, len(children), action.beneficiary_id, account.amount, block)
            )
            account = None
        else:  # FunctionCall: only pay.devnet's `pay` exists
            if account is None:
                raise _Failed(index, missing)
            if receiver_id != CONTRACT:
                error = {"CompilationError": {"CodeDoesNotExist": {"account_id": receiver_id}}}
                raise _Failed(index, {"FunctionCallError": error})
            if action.method_name != "pay":
                raise _Failed(index, {"FunctionCallError": {"MethodResolveError": "MethodNotFound"}})
            account.amount += action.deposit
            child = _pay(chain, receipt, len(children), action, block)
            account.amount -= action.deposit
            children.append(child)
            status = {"SuccessReceiptId": child.receipt_id}
    if account is not None and account.amount < account.storage_usage * STORAGE_PRICE:
        shortfall = account.storage_usage * STORAGE_PRICE - account.amount
        raise _Failed(None, {"LackBalanceForState": {"account_id": receiver_id, "amount": str(shortfall)}})
    if account is None:
        chain.accounts.pop(receiver_id, None)
    else:
        chain.accounts[receiver_id] = account
    return status, children


def _pay(chain: Chain, parent: Receipt, index: int, action: Action, block: Block) -> Receipt:
    """pay.devnet's `pay({"to", "delay"})`: a Transfer of the attached deposit to `to`, listed `delay`
    blocks after this one (at least the next)."""
    args = json.loads(action.args)
    fee = TRANSFER + RECEIPT_CREATION
    return Receipt(
        receipt_id_for(parent.receipt_id, index),
        parent.receiver_id,
        str(args["to"]),
        parent.signer_id,
        parent.signer_public_key,
        parent.gas_price,
        (Action("Transfer", deposit=action.deposit),),
        parent.tx_hash,
        shard_of(parent.receiver_id),
        block.ordinal + max(1, int(args.get("delay", 1))),
        fee,
    )


def refund(chain: Chain, parent: Receipt | None, index: int, to: str, amount: int, block: Block) -> Receipt:
    """A balance refund as nearcore makes it: from "system", signer "system", empty key, gas price 0."""
    receipt_id = (
        receipt_id_for(parent.receipt_id, index)
        if parent
        else receipt_id_for(block.hash, len(chain.receipts))
    )
    origin = shard_of(parent.receiver_id) if parent else shard_of(to)
    return Receipt(
        receipt_id,
        SYSTEM,
        to,
        SYSTEM,
        EMPTY_KEY,
        0,
        (Action("Transfer", deposit=amount),),
        parent.tx_hash if parent else None,
        origin,
        block.ordinal + 1,
    )
