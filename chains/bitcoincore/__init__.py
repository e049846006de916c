"""The Bitcoin Core family (btc, ltc, bch) over a node's JSON-RPC."""
