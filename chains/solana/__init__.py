"""The Solana family (sol): the `solana` backend (backend: deposits by Solana Pay reference at one receiving
address, keys; scanner; payouts from that address, with its signer and the signer's policy), its thin
JSON-RPC client (node), amounts (units), the reading of a payment's transfers (transfers) and its
CHAIN_NODES entry (config)."""
