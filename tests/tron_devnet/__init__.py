"""A TRON devnet for Kassa's tests: an HTTP server speaking a subset of java-tron's HTTP API (and TronGrid's
per-address TRC-20 history) over an in-process EVM, enforcing TRON's transaction rules. No java-tron can run
on our machines; this is the most real TRON the tests can reach.

What it enforces: T-addresses (0x41 + 20 bytes, base58check or hex by `visible`); txid = sha256 of the
protobuf raw_data (raw_data_hex is authoritative and the JSON raw_data must spell the same bytes); one
65-byte secp256k1 signature over the txid that recovers to the owner (SIGERROR); TAPOS against the recent
blocks (TAPOS_ERROR); expiration after the head block's time and at most 24 h ahead
(TRANSACTION_EXPIRATION_ERROR); duplicates (DUP_TRANSACTION_ERROR); bandwidth, the free 600 bytes, burning,
BANDWITH_ERROR; the activation fee; energy from stake, delegation or burnt TRX capped by fee_limit, with
OUT_OF_ENERGY and REVERT transactions included in blocks and paying their fees; the solidified height
(head - 19) behind `walletsolidity/`; forks of unsolidified blocks (`POST /devnet/fork`: their transactions
and the pending ones are dropped, not re-included; a client may broadcast them again).

What it is NOT:
- not the real TVM: contracts run in py-evm (a recent EVM, gas price 0); energy is the EVM's execution gas
  (gas used beyond the intrinsic 21,000 + calldata), close to, not equal to, TVM energy (a TRC-20 transfer is
  ~30k here, ~65k on mainnet USDT, ~131k to a first-time holder); no TRON precompiles or opcodes; no TRX
  sent to contracts (call_value), no deployment by transaction;
- no consensus: one producer, no SRs, no votes; a block is solid exactly 19 blocks behind the head; blocks
  come only when the test mines them (`POST /devnet/mine`), 3 s apart on the devnet's clock;
- resources are simplified (see ledger.py): staked TRX buys a fixed 10 energy / 1 bandwidth per TRX, usage
  recovers linearly over 24 h, delegation locks and unfreezing are not modelled;
- only the HTTP API subset in api.py (no gRPC, no events, no multi-signature permissions, no TRC-10);
  TronGrid's history has no fingerprint paging; errors carry java-tron's codes, and messages close to its.

Start it from a test with the `tron_devnet` fixture (tests/tron_devnet/fixtures.py), or by hand with
`make tron-devnet` (python -m tests.tron_devnet --port 8090)."""
