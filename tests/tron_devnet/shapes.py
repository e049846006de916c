"""java-tron's JSON for what the devnet holds: blocks, transactions with their `ret`, transaction infos
(receipts), accounts and their resources, node info. Protobuf's JSON leaves out zero and empty values;
so do these."""

from __future__ import annotations

from typing import Any

from tests.tron_devnet.encoding import address_text, contract_value, transaction_json
from tests.tron_devnet.ledger import (
    DAY_MS,
    PARAMETERS,
    TOTAL_ENERGY_WEIGHT,
    TOTAL_NET_WEIGHT,
    Account,
)
from tests.tron_devnet.node import Block, Devnet, Record

FAILURES = {"REVERT": "REVERT opcode executed", "OUT_OF_ENERGY": "Not enough energy"}


def _nonzero(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v not in (0, None, "", [], {})}


def transaction(record: Record, *, visible: bool, in_block: bool = True) -> dict[str, Any]:
    tx = transaction_json(record.raw_bytes, visible=visible, signatures=[s.hex() for s in record.signatures])
    if in_block:
        tx.pop("visible")
    return {"ret": [{"contractRet": record.outcome.ret}], **tx}


def block(devnet: Devnet, block: Block, *, visible: bool) -> dict[str, Any]:
    header = _nonzero(
        number=block.number,
        txTrieRoot=block.tx_root.hex(),
        witness_address=address_text(devnet.witness.raw_address, visible=visible),
        parentHash=block.parent.hex(),
        version=30,
        timestamp=block.timestamp,
    )
    signature = devnet.witness.sign_txid(block.id).hex()
    out: dict[str, Any] = {
        "blockID": block.id.hex(),
        "block_header": {"raw_data": header, "witness_signature": signature},
    }
    if block.records:
        out["transactions"] = [transaction(r, visible=visible) for r in block.records]
    return out


def info(record: Record, *, visible: bool) -> dict[str, Any]:
    """gettransactioninfobyid: the receipt of an included transaction."""
    outcome = record.outcome
    execution = outcome.execution
    receipt = _nonzero(
        energy_usage=outcome.energy_staked,
        energy_fee=outcome.energy_fee,
        energy_usage_total=outcome.energy_total,
        net_usage=record.net_usage,
        net_fee=record.net_fee,
    )
    if execution is not None:
        receipt["result"] = outcome.ret
    out = _nonzero(id=record.txid, fee=record.fee, blockNumber=record.block, blockTimeStamp=record.block_time)
    out["contractResult"] = [execution.output.hex() if execution else ""]
    if execution is not None:
        out["contract_address"] = address_text(
            contract_value(record.raw)["contract_address"], visible=visible
        )
    out["receipt"] = receipt
    if execution is not None and execution.logs:
        out["log"] = [
            {
                "address": address.hex(),
                "topics": [t.to_bytes(32, "big").hex() for t in topics],
                "data": data.hex(),
            }
            for address, topics, data in execution.logs
        ]
    if outcome.ret != "SUCCESS":
        out["result"] = "FAILED"
        out["resMessage"] = FAILURES[outcome.ret].encode().hex()
    return out


def account(address: bytes, acc: Account, *, visible: bool) -> dict[str, Any]:
    frozen = [
        # java-tron moves what is delegated out of frozenV2 (into delegated_frozenV2_balance_for_*).
        _nonzero(amount=acc.stake_available("BANDWIDTH")),
        _nonzero(type="ENERGY", amount=acc.stake_available("ENERGY")),
        {"type": "TRON_POWER"},
    ]
    resource = _nonzero(
        energy_usage=acc.energy_used,
        latest_consume_time_for_energy=acc.energy_time,
        energy_window_size=DAY_MS // 3_000,
        delegated_frozenV2_balance_for_energy=acc.delegated_out("ENERGY"),
        acquired_delegated_frozenV2_balance_for_energy=acc.acquired["ENERGY"],
    )
    return _nonzero(
        address=address_text(address, visible=visible),
        balance=acc.balance,
        create_time=acc.create_time,
        net_usage=acc.net_used,
        latest_consume_time=acc.net_time,
        free_net_usage=acc.free_net_used,
        latest_consume_free_time=acc.free_net_time,
        net_window_size=DAY_MS // 3_000,
        account_resource=resource,
        frozenV2=frozen,
        delegated_frozenV2_balance_for_bandwidth=acc.delegated_out("BANDWIDTH"),
        acquired_delegated_frozenV2_balance_for_bandwidth=acc.acquired["BANDWIDTH"],
    )


def account_resource(acc: Account, now: int) -> dict[str, Any]:
    return _nonzero(
        freeNetUsed=PARAMETERS["getFreeNetLimit"] - acc.free_net_left(now),
        freeNetLimit=PARAMETERS["getFreeNetLimit"],
        NetUsed=acc.net_limit() - acc.net_left(now),
        NetLimit=acc.net_limit(),
        TotalNetLimit=PARAMETERS["getTotalNetLimit"],
        TotalNetWeight=TOTAL_NET_WEIGHT,
        EnergyUsed=acc.energy_limit() - acc.energy_left(now),
        EnergyLimit=acc.energy_limit(),
        TotalEnergyLimit=PARAMETERS["getTotalEnergyCurrentLimit"],
        TotalEnergyWeight=TOTAL_ENERGY_WEIGHT,
        tronPowerLimit=(acc.frozen["BANDWIDTH"] + acc.frozen["ENERGY"]) // 1_000_000,
    )


def chain_parameters() -> dict[str, Any]:
    return {"chainParameter": [_nonzero(key=key, value=value) for key, value in PARAMETERS.items()]}


def node_info(devnet: Devnet) -> dict[str, Any]:
    solid = devnet.blocks[devnet.solid_number]
    return {
        "activeConnectCount": 0,
        "beginSyncNum": devnet.head.number,
        "block": f"Num:{devnet.head.number},ID:{devnet.head.id.hex()}",
        "solidityBlock": f"Num:{solid.number},ID:{solid.id.hex()}",
        "currentConnectCount": 0,
        "passiveConnectCount": 0,
        "totalFlow": 0,
        "peerList": [],
        "configNodeInfo": {"codeVersion": "devnet", "p2pVersion": "0", "versionNum": "0"},
        "machineInfo": {"cpuCount": 0, "javaVersion": "none: Kassa's TRON devnet"},
        "cheatWitnessInfoMap": {},
    }
