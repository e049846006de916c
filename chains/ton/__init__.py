"""TON: a thin client of toncenter's API v2 (node.py), amounts (units.py), the messages of a transaction read
from its bytes (messages.py), and the external message of a wallet v4R2 transfer (wallet.py). Not registered
as a backend yet (chains/backend.py)."""
