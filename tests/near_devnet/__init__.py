"""A NEAR JSON-RPC stub for Kassa's tests: an HTTP server on 127.0.0.1 (in a thread) answering a subset of
nearcore's JSON-RPC 2.0 in nearcore's documented answer and error shapes, over a small in-process chain
driven by scenario controls. No NEAR node can run on our machines (near-sandbox downloads its binary at
run time), so Kassa's NEAR client is tested against this.

THIS IS NOT NEARCORE. No consensus, no validators, no epochs: blocks are produced only when a control
says so (or every `--block-time` seconds by hand). Finality is simply two blocks: the final head is the
block two produced blocks below the head. Two shards with a fixed boundary (shard 0: account ids < "n",
shard 1: the rest). No real gas accounting: fixed costs per action (runtime.py) at a fixed gas price of
10^8 yocto, no prepaid-gas refunds. No contracts except the built-in pay.devnet behaviour (its `pay`
forwards the attached deposit to an account a few blocks later); FunctionCall anywhere else fails with
CodeDoesNotExist. A client may send only Transfer and DeleteAccount actions (legacy V0 transactions,
ed25519 keys); anything else is refused by name. Merkle proofs are empty and roots are placeholders.

Served (rpc.py): block, chunk, query (view_account, view_access_key), gas_price, status, send_tx,
broadcast_tx_async, broadcast_tx_commit, tx, EXPERIMENTAL_tx_status, EXPERIMENTAL_receipt,
EXPERIMENTAL_light_client_proof. nearcore waits ~10 s for `wait_until` before answering TIMEOUT_ERROR; the
stub never blocks: it answers the level reached or TIMEOUT_ERROR at once.

Enforced on send_tx: the ed25519 signature over sha256 of the transaction, the access key of the signer,
nonce > the key's nonce and < height of the referenced block x 10^6, the block hash known and within
`validity` blocks (86400 by default), the signer's balance for deposits + fees and its storage cost
afterwards; the same transaction twice runs once. Implicit accounts are created by a lone Transfer of at
least their storage cost (182 bytes x 10^19), with key nonce (height - 1) x 10^6; below it the receipt
fails and "system" refunds the deposit. Amounts are yoctoNEAR ints written as decimal strings.

The shapes follow docs.near.org (api/rpc/*) and nearcore's JSON as looked up on 2026-11-29.

Start it from a test with the `near_devnet` or `make_near_devnet` fixture (fixtures.py), or by hand with
`make near-devnet` (python -m tests.near_devnet --port 3030 [--block-time 1.0] [--api-key K])."""
