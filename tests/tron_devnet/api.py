"""The endpoints: java-tron's `wallet/` and `walletsolidity/` subset, TronGrid's per-address TRC-20 history,
and the devnet's controls under `devnet/`. Each handler takes the request's fields (POST JSON or GET query,
as java-tron accepts both) and answers JSON; java-tron answers its errors with HTTP 200."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eth_abi import encode as abi_encode

from tests.tron_devnet import shapes
from tests.tron_devnet.encoding import (
    DecodeError,
    address_bytes,
    address_text,
    transaction_json,
)
from tests.tron_devnet.ledger import Refused
from tests.tron_devnet.node import BLOCK_MS, TOKEN, TRANSFER_TOPIC, Devnet, selector

Handler = Callable[[Devnet, dict[str, Any], bool], Any]
ROUTES: dict[str, Handler] = {}


class BadRequest(Exception):
    """A control request the devnet cannot serve (HTTP 400)."""


def route(*paths: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        for path in paths:
            ROUTES[path] = handler
        return handler

    return register


def _error(exc: Exception, name: str = "java.lang.IllegalArgumentException") -> dict[str, Any]:
    message = exc.message.removeprefix("Contract validate error : ") if isinstance(exc, Refused) else str(exc)
    return {"Error": f"class {name} : {message}"}


def _num(fields: dict[str, Any], name: str, default: int | None = None) -> int:
    if name not in fields:
        if default is None:
            raise DecodeError(f"{name} is required")
        return default
    return int(fields[name])


# --- blocks and transactions --------------------------------------------------------------------------


@route("wallet/getnodeinfo")
def node_info(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    return shapes.node_info(devnet)


@route("wallet/getnowblock", "walletsolidity/getnowblock")
def now_block(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    solid = fields["_solidity"]
    return shapes.block(devnet, devnet.blocks[devnet.solid_number] if solid else devnet.head, visible=visible)


@route("wallet/getblockbynum", "walletsolidity/getblockbynum")
def block_by_num(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    number = _num(fields, "num")
    block = devnet.block(number)
    if block is None or (fields["_solidity"] and number > devnet.solid_number):
        return {}
    return shapes.block(devnet, block, visible=visible)


@route("wallet/getblockbyid")
def block_by_id(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    value = str(fields.get("value", ""))
    block = devnet.block(int(value[:16], 16)) if len(value) == 64 else None
    return shapes.block(devnet, block, visible=visible) if block and block.id.hex() == value else {}


@route("wallet/gettransactioninfobyblocknum", "walletsolidity/gettransactioninfobyblocknum")
def infos_by_block(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    number = _num(fields, "num")
    block = devnet.block(number)
    if block is None or (fields["_solidity"] and number > devnet.solid_number):
        return []
    return [shapes.info(r, visible=visible) for r in block.records]


def _included(devnet: Devnet, fields: dict[str, Any]) -> Any:
    record = devnet.index.get(str(fields.get("value", "")).lower())
    if record is None or record.block is None:
        return None
    if fields["_solidity"] and record.block > devnet.solid_number:
        return None
    return record


@route("wallet/gettransactionbyid", "walletsolidity/gettransactionbyid")
def transaction_by_id(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    record = _included(devnet, fields)
    if record is None:
        return {}
    return shapes.transaction(record, visible=visible, in_block=False)


@route("wallet/gettransactioninfobyid", "walletsolidity/gettransactioninfobyid")
def info_by_id(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    record = _included(devnet, fields)
    return {} if record is None else shapes.info(record, visible=visible)


@route("wallet/broadcasttransaction")
def broadcast(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    return devnet.broadcast({k: v for k, v in fields.items() if not k.startswith("_")})


# --- building -----------------------------------------------------------------------------------------


def _build(devnet: Devnet, kind: str, value: dict[str, Any], visible: bool, **options: Any) -> Any:
    try:
        raw_bytes = devnet.build(kind, value, **options)
    except Refused as refused:
        return _error(refused, "org.tron.core.exception.ContractValidateException")
    return transaction_json(raw_bytes, visible=visible)


@route("wallet/createtransaction")
def create_transaction(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    memo = fields.get("extra_data", "")
    data = memo.encode() if visible else bytes.fromhex(memo)
    value = {
        "owner_address": address_bytes(fields["owner_address"]),
        "to_address": address_bytes(fields["to_address"]),
        "amount": _num(fields, "amount"),
    }
    return _build(devnet, "TransferContract", value, visible, data=data)


def _call_data(fields: dict[str, Any]) -> bytes:
    if fields.get("data"):
        return bytes.fromhex(fields["data"])
    return selector(fields["function_selector"]) + bytes.fromhex(fields.get("parameter", ""))


def _trigger_value(fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "owner_address": address_bytes(fields["owner_address"]),
        "contract_address": address_bytes(fields["contract_address"]),
        "call_value": _num(fields, "call_value", 0),
        "data": _call_data(fields),
    }


@route("wallet/triggersmartcontract")
def trigger_smart_contract(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    value = _trigger_value(fields)
    try:
        raw_bytes = devnet.build("TriggerSmartContract", value, fee_limit=_num(fields, "fee_limit", 0))
    except Refused as refused:
        message = refused.message.removeprefix("Contract validate error : ")
        return {"result": {"code": refused.code, "message": message.encode().hex()}}
    return {"result": {"result": True}, "transaction": transaction_json(raw_bytes, visible=visible)}


@route("wallet/triggerconstantcontract")
def trigger_constant_contract(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    answer = trigger_smart_contract(devnet, fields, visible)
    if "transaction" not in answer:
        return answer
    value = _trigger_value(fields)
    with devnet.lock:
        execution = devnet.evm.call(value["owner_address"][1:], value["contract_address"][1:], value["data"])
    answer["energy_used"] = execution.energy_used
    answer["constant_result"] = [execution.output.hex()]
    if not execution.success:
        failure = shapes.FAILURES["REVERT" if execution.reverted else "OUT_OF_ENERGY"]
        # java-tron's servlet answers result: true whatever the call did; the failure is the
        # transaction's ret and the result's message (Wallet.callConstantContract).
        answer["result"] = {"result": True, "message": failure.encode().hex()}
        answer["transaction"]["ret"] = [{"ret": "FAILED"}]
    return answer


@route("wallet/freezebalancev2")
def freeze_balance_v2(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    value = {
        "owner_address": address_bytes(fields["owner_address"]),
        "frozen_balance": _num(fields, "frozen_balance"),
        "resource": fields.get("resource", "BANDWIDTH"),
    }
    return _build(devnet, "FreezeBalanceV2Contract", value, visible)


def _delegation(fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "owner_address": address_bytes(fields["owner_address"]),
        "receiver_address": address_bytes(fields["receiver_address"]),
        "balance": _num(fields, "balance"),
        "resource": fields.get("resource", "BANDWIDTH"),
    }


@route("wallet/delegateresource")
def delegate_resource(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    value = dict(
        _delegation(fields), lock=int(bool(fields.get("lock"))), lock_period=_num(fields, "lock_period", 0)
    )
    return _build(devnet, "DelegateResourceContract", value, visible)


@route("wallet/undelegateresource")
def undelegate_resource(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    return _build(devnet, "UnDelegateResourceContract", _delegation(fields), visible)


# --- accounts and parameters --------------------------------------------------------------------------


@route("wallet/getaccount")
def get_account(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    address = address_bytes(fields["address"])
    with devnet.lock:
        account = devnet.ledger.get(address)
        return {} if account is None else shapes.account(address, account, visible=visible)


@route("wallet/getaccountresource")
def get_account_resource(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    with devnet.lock:
        account = devnet.ledger.get(address_bytes(fields["address"]))
        return {} if account is None else shapes.account_resource(account, devnet.head.timestamp + BLOCK_MS)


@route("wallet/getchainparameters")
def chain_parameters(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    return shapes.chain_parameters()


# --- TronGrid -----------------------------------------------------------------------------------------


def trc20_history(devnet: Devnet, address: str, query: dict[str, Any]) -> Any:
    """TronGrid's GET v1/accounts/{address}/transactions/trc20 over the devnet's blocks (no fingerprint
    paging: `limit` newest, or oldest with order_by=block_timestamp,asc)."""
    who = address_bytes(address)[1:]

    def flag(name: str) -> bool:
        return str(query.get(name, "false")).lower() == "true"

    contract = address_bytes(query["contract_address"]) if "contract_address" in query else devnet.token
    limit = min(int(query.get("limit", 20)), 200)
    found: list[dict[str, Any]] = []
    with devnet.lock:
        for block in devnet.blocks:
            confirmed = block.number <= devnet.solid_number
            if (flag("only_confirmed") and not confirmed) or (flag("only_unconfirmed") and confirmed):
                continue
            if (
                not int(query.get("min_timestamp", 0))
                <= block.timestamp
                <= int(query.get("max_timestamp", 2**63))
            ):
                continue
            for record in block.records:
                execution = record.outcome.execution
                for log_address, topics, data in execution.logs if execution else []:
                    if (
                        log_address != contract[1:]
                        or len(topics) != 3
                        or topics[0].to_bytes(32, "big") != TRANSFER_TOPIC
                    ):
                        continue
                    sender, receiver = topics[1].to_bytes(32, "big")[12:], topics[2].to_bytes(32, "big")[12:]
                    if who not in (sender, receiver) or (flag("only_to") and receiver != who):
                        continue
                    if flag("only_from") and sender != who:
                        continue
                    found.append(
                        {
                            "transaction_id": record.txid,
                            "token_info": {**TOKEN, "address": address_text(devnet.token, visible=True)},
                            "block_timestamp": block.timestamp,
                            "from": address_text(b"\x41" + sender, visible=True),
                            "to": address_text(b"\x41" + receiver, visible=True),
                            "type": "Transfer",
                            "value": str(int.from_bytes(data, "big")),
                        }
                    )
        now = devnet.head.timestamp
    if query.get("order_by", "block_timestamp,desc") != "block_timestamp,asc":
        found.reverse()
    return {"data": found[:limit], "success": True, "meta": {"at": now, "page_size": len(found[:limit])}}


# --- controls -----------------------------------------------------------------------------------------


@route("devnet/mine")
def mine(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    blocks = _num(fields, "blocks", 1)
    if blocks < 1:
        raise BadRequest("blocks must be at least 1")
    head = devnet.mine(blocks, skip_ms=_num(fields, "skip_seconds", 0) * 1000)
    return {
        "head": head.number,
        "blockID": head.id.hex(),
        "timestamp": head.timestamp,
        "solid": devnet.solid_number,
    }


@route("devnet/fork")
def fork(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    try:
        dropped = devnet.fork(_num(fields, "depth"))
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
    return {"head": devnet.head.number, "blockID": devnet.head.id.hex(), "dropped": dropped}


def _faucet(devnet: Devnet, kind: str, value: dict[str, Any], **options: Any) -> str:
    try:
        answer = devnet.faucet_send(kind, value, **options)
    except Refused as refused:
        raise BadRequest(refused.message) from refused
    if not answer.get("result"):
        raise BadRequest(f"the faucet's transaction was refused: {answer}")
    return str(answer["txid"])


@route("devnet/fund")
def fund(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    """Faucet transfers, signed by the faucet and broadcast (seen in the next block): `sun` of TRX and/or
    `token` units of the TRC-20."""
    to = address_bytes(fields["address"])
    txids = []
    if _num(fields, "sun", 0):
        txids.append(_faucet(devnet, "TransferContract", {"to_address": to, "amount": _num(fields, "sun")}))
    if _num(fields, "token", 0):
        data = selector("transfer(address,uint256)") + abi_encode(
            ["address", "uint256"], [to[1:], _num(fields, "token")]
        )
        value = {"contract_address": devnet.token, "data": data}
        txids.append(_faucet(devnet, "TriggerSmartContract", value, fee_limit=100_000_000))
    return {"txids": txids}


@route("devnet/blacklist")
def blacklist(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    """The token owner (the faucet) calls addBlackList, or removeBlackList with "blacklisted": false."""
    who = address_bytes(fields["address"])
    function = "addBlackList(address)" if fields.get("blacklisted", True) else "removeBlackList(address)"
    value = {
        "contract_address": devnet.token,
        "data": selector(function) + abi_encode(["address"], [who[1:]]),
    }
    return {"txid": _faucet(devnet, "TriggerSmartContract", value, fee_limit=100_000_000)}


@route("devnet/stake")
def stake(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    """Freeze TRX of an account for ENERGY (default) or BANDWIDTH at once, as FreezeBalanceV2 would."""
    resource = fields.get("resource", "ENERGY")
    if resource not in ("ENERGY", "BANDWIDTH"):
        raise BadRequest("resource is ENERGY or BANDWIDTH")
    try:
        devnet.stake(address_bytes(fields["address"]), _num(fields, "sun"), resource)
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
    return {"staked": True}


@route("devnet/info")
def info(devnet: Devnet, fields: dict[str, Any], visible: bool) -> Any:
    def key(k: Any) -> dict[str, str]:
        return {"address": k.address, "hex": k.hex_address, "private_key": k.secret.hex()}

    return {
        "faucet": key(devnet.faucet),
        "accounts": {name: key(k) for name, k in devnet.keys.items()},
        "token": {
            **TOKEN,
            "address": address_text(devnet.token, visible=True),
            "hex": devnet.token.hex(),
            "owner": devnet.faucet.address,
        },
        "head": devnet.head.number,
        "solid": devnet.solid_number,
    }
