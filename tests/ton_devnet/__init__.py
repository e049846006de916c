"""A TON devnet for Kassa's tests: toncenter's HTTP API v2 (the methods Kassa uses, in toncenter's shapes)
served by a Node process over @ton/sandbox, whose emulator runs the real wallet contracts in a WASM TVM.
server.js is the devnet, fixtures.py the pytest fixture and its client; docs/ton.md says what it is and is
not."""
