"""getSignaturesForAddress as Agave pages it: newest first (by slot, then the later in a slot first), `limit`,
`before` and `until` exclusive, an unknown `before` finding nothing and an unknown `until` bounding
nothing; getSignatureStatuses within the status cache or the whole history."""

from __future__ import annotations

from solders.keypair import Keypair
from solders.signature import Signature

from tests.solana_devnet.fixtures import DevnetClient
from tests.solana_devnet.node import STATUS_CACHE_SLOTS

SOL = 1_000_000_000


def test_signatures_come_newest_first_and_page_with_before_and_until(solana_devnet: DevnetClient) -> None:
    merchant = Keypair().pubkey()
    sent = []
    for slot in range(3):
        for n in range(2):
            sent.append(solana_devnet.payment(merchant, SOL + 10 * slot + n))
        solana_devnet.mine()
    newest_first = sent[::-1]

    def page(**config: object) -> list[str]:
        answer = solana_devnet.rpc(
            "getSignaturesForAddress", str(merchant), {"commitment": "confirmed", **config}
        )
        return [item["signature"] for item in answer]

    assert page() == newest_first
    assert page(limit=2) == newest_first[:2]
    assert page(before=newest_first[1], limit=3) == newest_first[2:5]
    assert page(until=newest_first[3]) == newest_first[:3]
    assert page(before=newest_first[0], until=newest_first[4]) == newest_first[1:4]
    assert page(before=str(Signature.new_unique())) == []  # an unknown `before`: nothing
    assert page(until=str(Signature.new_unique())) == newest_first  # an unknown `until`: no bound
    slots = [
        item["slot"]
        for item in solana_devnet.rpc("getSignaturesForAddress", str(merchant), {"commitment": "confirmed"})
    ]
    assert slots == sorted(slots, reverse=True)


def test_statuses_beyond_the_status_cache_need_search_transaction_history(
    solana_devnet: DevnetClient,
) -> None:
    signature = solana_devnet.payment(Keypair().pubkey(), SOL)
    solana_devnet.mine(STATUS_CACHE_SLOTS)  # the cache holds the last 300 slots: its slot is the oldest
    assert solana_devnet.rpc("getSignatureStatuses", [signature])["value"][0]["slot"] > 0
    solana_devnet.mine()
    unknown = str(Signature.new_unique())

    recent = solana_devnet.rpc("getSignatureStatuses", [signature, unknown])
    history = solana_devnet.rpc(
        "getSignatureStatuses", [signature, unknown], {"searchTransactionHistory": True}
    )

    assert recent["value"] == [None, None]
    assert history["value"][0]["confirmationStatus"] == "finalized" and history["value"][1] is None
    assert recent["context"]["slot"] == solana_devnet.rpc("getSlot", {"commitment": "processed"})
