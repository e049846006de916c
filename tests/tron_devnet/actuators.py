"""What each contract type checks and does (java-tron's "actuators"), for the types the devnet serves:
AccountCreateContract, TransferContract, TriggerSmartContract, FreezeBalanceV2Contract,
DelegateResourceContract and UnDelegateResourceContract. `check` raises Refused(CONTRACT_VALIDATE_ERROR)
with java-tron's wording; `apply` changes the ledger (and the EVM) and answers the receipt's parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.tron_devnet.encoding import b58check_encode
from tests.tron_devnet.evm import Evm, Execution
from tests.tron_devnet.ledger import PARAMETERS, SUN, Account, Ledger, Refused


@dataclass
class Outcome:
    ret: str = "SUCCESS"  # the block's contractRet: SUCCESS, REVERT, OUT_OF_ENERGY
    fee: int = 0  # sun burnt besides bandwidth: activation, energy
    energy_staked: int = 0
    energy_fee: int = 0
    energy_total: int = 0
    execution: Execution | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def refuse(message: str) -> Refused:
    return Refused("CONTRACT_VALIDATE_ERROR", f"Contract validate error : {message}")


def check(
    ledger: Ledger, evm: Evm, kind: str, value: dict[str, Any], raw: dict[str, Any], spare: int
) -> None:
    """Refuse what java-tron refuses; `spare` is the owner's balance after the bandwidth bill. A call's
    owner need not exist to build it (the broadcast checks that)."""
    owner = ledger.get(value.get("owner_address", b""))
    if owner is None and kind != "TriggerSmartContract":
        raise refuse(f"Validate {kind} error, no OwnerAccount.")
    if kind == "AccountCreateContract":
        if ledger.get(value.get("account_address", b"")) is not None:
            raise refuse("Account has existed")
        if spare < PARAMETERS["getCreateNewAccountFeeInSystemContract"]:
            raise refuse("Validate CreateAccountActuator error, insufficient fee.")
    elif kind == "TransferContract":
        to, amount = value.get("to_address", b""), value.get("amount", 0)
        if amount <= 0:
            raise refuse("Amount must be greater than 0.")
        if to == value["owner_address"]:
            raise refuse("Cannot transfer TRX to yourself.")
        fee = PARAMETERS["getCreateNewAccountFeeInSystemContract"] if ledger.get(to) is None else 0
        if spare < amount + fee:
            raise refuse("Validate TransferContract error, balance is not sufficient.")
    elif kind == "TriggerSmartContract":
        limit = raw.get("fee_limit", 0)
        if not 0 <= limit <= PARAMETERS["getMaxFeeLimit"]:
            raise refuse(f"feeLimit must be >= 0 and <= {PARAMETERS['getMaxFeeLimit']}")
        if value.get("call_value", 0) or value.get("call_token_value", 0):
            raise refuse("callValue is not served by the devnet")
        if not evm.code(value.get("contract_address", b"\0")[1:]):
            raise refuse("No contract or not a valid smart contract")
    elif kind == "FreezeBalanceV2Contract":
        sun = value.get("frozen_balance", 0)
        if sun < SUN:
            raise refuse("frozenBalance must be greater than or equal to 1 TRX")
        if sun > spare:
            raise refuse("frozenBalance must be less than or equal to accountBalance")
    elif kind == "DelegateResourceContract" and owner is not None:
        _check_delegate(ledger, owner, value)
    elif kind == "UnDelegateResourceContract" and owner is not None:
        resource, sun = value.get("resource", "BANDWIDTH"), value.get("balance", 0)
        held = owner.delegated.get((value.get("receiver_address", b""), resource), 0)
        if sun <= 0 or held < sun:
            name = "Energy" if resource == "ENERGY" else "Bandwidth"
            raise refuse(f"insufficient delegatedFrozenBalance({name}), request={sun}, unlock_balance={held}")


def _check_delegate(ledger: Ledger, owner: Account, value: dict[str, Any]) -> None:
    sun, resource = value.get("balance", 0), value.get("resource", "BANDWIDTH")
    receiver = value.get("receiver_address", b"")
    if sun < SUN:
        raise refuse("delegateBalance must be greater than or equal to 1 TRX")
    if sun > owner.stake_available(resource):
        raise refuse("delegateBalance must be less than or equal to available FreezeV2 balance")
    if receiver == value["owner_address"]:
        raise refuse("receiverAddress must not be the same as ownerAddress")
    if ledger.get(receiver) is None:
        raise refuse(
            f"Account[{b58check_encode(receiver) if len(receiver) == 21 else receiver.hex()}] does not exist"
        )


def apply(
    ledger: Ledger, evm: Evm, kind: str, value: dict[str, Any], raw: dict[str, Any], now: int
) -> Outcome:
    owner = ledger.accounts[value["owner_address"]]
    if kind == "AccountCreateContract":
        ledger.create(value["account_address"], now)
        fee = PARAMETERS["getCreateNewAccountFeeInSystemContract"]
        owner.balance -= fee
        return Outcome(fee=fee)
    if kind == "TransferContract":
        to = value["to_address"]
        outcome = Outcome()
        if ledger.get(to) is None:
            ledger.create(to, now)
            outcome.fee = PARAMETERS["getCreateNewAccountFeeInSystemContract"]
        owner.balance -= value["amount"] + outcome.fee
        ledger.accounts[to].balance += value["amount"]
        return outcome
    if kind == "TriggerSmartContract":
        return _trigger(ledger, evm, owner, value, raw, now)
    resource = value.get("resource", "BANDWIDTH")
    if kind == "FreezeBalanceV2Contract":
        ledger.stake(owner, value["frozen_balance"], resource)
    elif kind == "DelegateResourceContract":
        ledger.delegate(owner, value["receiver_address"], value["balance"], resource)
    elif kind == "UnDelegateResourceContract":
        ledger.undelegate(owner, value["receiver_address"], value["balance"], resource)
    return Outcome()


def _trigger(
    ledger: Ledger, evm: Evm, owner: Account, value: dict[str, Any], raw: dict[str, Any], now: int
) -> Outcome:
    budget = ledger.energy_budget(owner, raw.get("fee_limit", 0), now)
    execution = evm.execute(
        value["owner_address"][1:], value["contract_address"][1:], value.get("data", b""), budget
    )
    # A failed call still pays for the energy it burnt: all of the budget when it ran out (OUT_OF_ENERGY).
    staked, burnt = ledger.pay_energy(owner, execution.energy_used, now)
    ret = "SUCCESS" if execution.success else "REVERT" if execution.reverted else "OUT_OF_ENERGY"
    return Outcome(
        ret=ret,
        fee=burnt,
        energy_staked=staked,
        energy_fee=burnt,
        energy_total=execution.energy_used,
        execution=execution,
    )
