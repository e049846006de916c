"""TON: the `ton` backend (backend.py: deposits to the house wallet told apart by their comments, keys.py,
scanner.py; payouts not written yet) over a thin client of toncenter's API v2 (node.py, results.py), amounts
(units.py), the messages of a transaction read from its bytes (messages.py), and the external message of a
wallet v4R2 transfer (wallet.py)."""
