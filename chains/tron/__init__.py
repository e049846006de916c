"""The `tron` backend (trx, trc20usdt): a skeleton, the test of the chain backend contract."""
