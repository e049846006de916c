"""A Solana devnet for Kassa's tests: a JSON-RPC 2.0 HTTP server speaking a subset of Agave's RPC over
LiteSVM (solders.litesvm: Agave's SVM, its system, compute-budget and memo programs, sysvars and fees) in
process. No validator can run on our machines; this is the most real Solana the tests can reach.

Served (rpc.py), in Agave's answer shapes and with its error objects: getSlot, getBlockHeight,
getLatestBlockhash, getBalance, getSignaturesForAddress, getTransaction, getSignatureStatuses,
sendTransaction, getFeeForMessage, getRecentPrioritizationFees.

What it enforces: transactions are executed by the real SVM (signatures, fee payer, rent, the programs'
own checks); a transaction that fails in execution is recorded with its `err` and pays its fee; one that
fails to load (no fee payer, too poor for the fee, a bad signature) is never recorded. Recent blockhashes
as Agave: one per slot, valid up to `lastValidBlockHeight` = its block height + 150 (BlockhashNotFound
after); duplicates refused (AlreadyProcessed) while the status cache holds them. sendTransaction runs the
preflight as Agave does (signatures, then a simulation against the bank at `preflightCommitment`,
finalized by default), refusing with -32003 or -32002 and the simulation's result; `skipPreflight`
takes the transaction as a leader would, and one that cannot land is silently dropped.

Commitment: the working bank (slot head + 1) executes transactions as they come (`processed`); a slot is
produced only on request (`POST /devnet/mine`), which makes its transactions `confirmed`; a slot is
`finalized` 31 slots behind the head. getBalance, getSlot and getLatestBlockhash answer at the bank of the
asked commitment (finalized by default, as Agave); getTransaction and getSignaturesForAddress refuse
`processed`, as Agave does.

What it is NOT:
- no consensus, no forks, no skipped slots after genesis: every slot is produced and every produced slot
  is eventually finalized; `confirmations` is simply the depth under the head;
- one state: the SVM holds only the newest (processed) state; balances at older banks are read back from
  the recorded transactions' pre/post balances, and the preflight simulation runs against the newest
  state whatever `preflightCommitment` says (its blockhash and duplicate checks do use that bank);
- legacy and v0 transactions without address lookup tables (those are refused); no token balances in
  meta (no SPL token accounts are made here); `jsonParsed` is not served; no websockets, no
  requestAirdrop (the faucet is a control);
- LiteSVM does not charge fee-only failures (a missing program): such a transaction is dropped here, where
  mainnet would record it with its fee;
- blockTime is the devnet's clock: 400 ms a slot from genesis.

Start it from a test with the `solana_devnet` fixture (tests/solana_devnet/fixtures.py), or by hand with
`make solana-devnet` (python -m tests.solana_devnet --port 8899)."""
