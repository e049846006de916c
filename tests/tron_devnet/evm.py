"""Contract execution for the devnet: py-evm (through eth-tester's chain setup) used as a bare state machine.
TRON's TVM is an EVM derivative; here the EVM runs the calls, with the TRON owner as `msg.sender` (a spoofed
sender: the devnet has checked the TRON signature already, so no EVM signature is needed).

Energy is the EVM's execution gas: the gas used beyond the transaction's intrinsic cost (21,000 + calldata),
which TRON bills as bandwidth instead. It is close to, not equal to, TVM energy (a TRC-20 transfer is ~30k
here, ~65k on mainnet USDT). The gas price is 0 (base fee 0), so the EVM moves no value: TRX lives in the
devnet's ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eth.vm.spoof import SpoofTransaction
from eth_tester.backends.pyevm.main import get_default_genesis_params, setup_tester_chain

GENESIS_SECONDS = 1_767_225_600  # 2026-01-01T00:00:00Z, the EVM's own clock; contracts here do not read it
BLOCK_GAS = 30_000_000


@dataclass
class Execution:
    success: bool
    reverted: bool
    out_of_energy: bool
    energy_used: int
    output: bytes
    logs: list[tuple[bytes, list[int], bytes]] = field(default_factory=list)
    created: bytes | None = None  # the 20-byte EVM address a deployment made
    error: str = ""


class Evm:
    def __init__(self) -> None:
        params = dict(get_default_genesis_params({"timestamp": GENESIS_SECONDS}), base_fee_per_gas=0)
        _, chain = setup_tester_chain(genesis_params=params, genesis_state={})
        self._vm = chain.get_vm()
        self._db = chain.chaindb.db
        self.state: Any = self._vm.state

    def commit(self) -> bytes:
        """Write the current state down; the root it returns can be restored by `restore` (forks)."""
        self.state.persist()
        return bytes(self.state.state_root)

    def restore(self, root: bytes) -> None:
        self.state = type(self.state)(self._db, self.state.execution_context, root)

    def _transaction(self, sender: bytes, to: bytes | None, data: bytes, energy_limit: int) -> Any:
        probe = self._vm.create_unsigned_transaction(
            nonce=0, gas_price=0, gas=0, to=to or b"", value=0, data=data
        )
        intrinsic = probe.intrinsic_gas
        gas = min(intrinsic + max(energy_limit, 0), BLOCK_GAS)
        unsigned = self._vm.create_unsigned_transaction(
            nonce=self.state.get_nonce(sender), gas_price=0, gas=gas, to=to or b"", value=0, data=data
        )
        return SpoofTransaction(unsigned, from_=sender), intrinsic

    def execute(self, sender: bytes, to: bytes | None, data: bytes, energy_limit: int) -> Execution:
        """Run a call (or a deployment when `to` is None) and keep its effects unless it failed."""
        return self._run(sender, to, data, energy_limit, keep=True)

    def call(self, sender: bytes, to: bytes, data: bytes, energy_limit: int = BLOCK_GAS) -> Execution:
        """Run a call and throw its effects away (triggerconstantcontract)."""
        return self._run(sender, to, data, energy_limit, keep=False)

    def _run(
        self, sender: bytes, to: bytes | None, data: bytes, energy_limit: int, *, keep: bool
    ) -> Execution:
        transaction, intrinsic = self._transaction(sender, to, data, energy_limit)
        if transaction.gas < intrinsic:
            return Execution(False, False, True, 0, b"", error="no energy")
        snapshot = self.state.snapshot()
        computation = self.state.apply_transaction(transaction)
        success = computation.is_success
        error = "" if success else type(computation._error).__name__
        reverted = not success and error == "Revert"
        execution = Execution(
            success=success,
            reverted=reverted,
            out_of_energy=not success and not reverted,
            energy_used=computation.get_gas_used(),
            output=bytes(computation.output),
            logs=[(bytes(a), list(t), bytes(d)) for a, t, d in computation.get_log_entries()]
            if success
            else [],
            created=bytes(computation.msg.storage_address) if success and to is None else None,
            error=error,
        )
        if keep:
            # A failed call leaves only its nonce bump behind, as a failed EVM transaction does.
            self.state.commit(snapshot)
            self.state.lock_changes()  # the next transaction sees these as original values (EIP-2200)
        else:
            self.state.revert(snapshot)
        return execution

    def code(self, address: bytes) -> bytes:
        return bytes(self.state.get_code(address))
