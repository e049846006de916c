"""The `tron` backend (trx, trc20usdt): its thin client, configuration and deposits; payouts not yet."""
