"""Transactions as a customer's wallet builds them: a Solana Pay transfer (the system program's transfer,
each `reference` appended to it as a read-only non-signer account, the memo instruction immediately before
it), with optional compute-budget instructions first, in a legacy or a v0 message."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
COMPUTE_BUDGET_PROGRAM = Pubkey.from_string("ComputeBudget111111111111111111111111111111")
MEMO_V1 = Pubkey.from_string("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo")
MEMO_V3 = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")  # what wallets use
MEMO_PROGRAMS = {"v1": MEMO_V1, "v3": MEMO_V3}
LAMPORTS_PER_SOL = 1_000_000_000


def keypair(name: str) -> Keypair:
    """The devnet's keypair of `name`: the same on every run (its seed is a hash of the name)."""
    return Keypair.from_seed(hashlib.sha256(f"kassa solana devnet: {name}".encode()).digest())


def transfer_instruction(
    payer: Pubkey, to: Pubkey, lamports: int, references: Sequence[Pubkey] = ()
) -> Instruction:
    plain = transfer(TransferParams(from_pubkey=payer, to_pubkey=to, lamports=lamports))
    extra = [AccountMeta(reference, is_signer=False, is_writable=False) for reference in references]
    return Instruction(plain.program_id, plain.data, [*plain.accounts, *extra])


def memo_instruction(text: str | bytes, program: Pubkey = MEMO_V3) -> Instruction:
    return Instruction(program, text.encode() if isinstance(text, str) else text, [])


def payment(
    payer: Keypair,
    to: Pubkey,
    lamports: int,
    blockhash: Hash,
    *,
    references: Sequence[Pubkey] = (),
    memo: str | bytes | None = None,
    memo_program: Pubkey = MEMO_V3,
    compute_unit_limit: int | None = None,
    compute_unit_price: int | None = None,
    version: str | int = 0,
    signers: Sequence[Keypair] | None = None,
) -> VersionedTransaction:
    """A signed Solana Pay transfer of `lamports` from `payer` to `to` (v0 by default, "legacy" too)."""
    instructions = []
    if compute_unit_limit is not None:
        instructions.append(set_compute_unit_limit(compute_unit_limit))
    if compute_unit_price is not None:
        instructions.append(set_compute_unit_price(compute_unit_price))
    if memo is not None:
        instructions.append(memo_instruction(memo, memo_program))
    instructions.append(transfer_instruction(payer.pubkey(), to, lamports, references))
    return signed(payer, instructions, blockhash, version=version, signers=signers)


def signed(
    payer: Keypair,
    instructions: Sequence[Instruction],
    blockhash: Hash,
    *,
    version: str | int = 0,
    signers: Sequence[Keypair] | None = None,
) -> VersionedTransaction:
    if version == "legacy":
        message: Message | MessageV0 = Message.new_with_blockhash(
            list(instructions), payer.pubkey(), blockhash
        )
    elif version == 0:
        message = MessageV0.try_compile(payer.pubkey(), list(instructions), [], blockhash)
    else:
        raise ValueError(f"a transaction is legacy or v0, not {version!r}")
    return VersionedTransaction(message, list(signers or [payer]))
