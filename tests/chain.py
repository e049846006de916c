"""The one helper for moving money in tests: pay an invoice or an address on the sandbox chain, mine
blocks, send the due payouts, fund a balance. Every test that pays or mines uses these (through the
services, or through the sandbox API when the test is about HTTP). `TronChain` does the same on the TRON
devnet (tests/tron_devnet) for the tron backend: signed transfers, blocks, forks, one scan; `TonChain` on the
TON devnet (tests/ton_devnet) for the ton backend: customers' payments with or without a comment, the house
wallet's own transfers, one scan; `SolanaChain` on the Solana devnet (tests/solana_devnet) for the solana
backend; `NearChain` on the NEAR JSON-RPC stub (tests/near_devnet) for the near backend."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import secrets
import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from nacl.signing import SigningKey
from pytoniq_core import Address, Cell, begin_cell
from solders.keypair import Keypair

from chains.models import ChainTx
from chains.scanning import chain_scan
from chains.simulator import sandbox_deposit, sandbox_mine
from chains.ton.node import TonCenter
from chains.ton.units import to_nanotons
from chains.ton.wallet import (
    DEFAULT_SEND_MODE,
    DEFAULT_WALLET_ID,
    external_transfer,
    internal_message,
    public_key_of,
    wallet_v4r2_address,
)
from chains.ton.wallet import Transfer as TonTransfer
from core.assets import get_asset
from invoices.models import Invoice
from payments.ledger import ledger_credit
from payments.models import Account, Company, LedgerEntry, SandboxTransaction
from webhooks.models import WebhookEvent
from withdrawals.models import Withdrawal
from withdrawals.payouts import payout_broadcast, payout_plan

_funding = itertools.count(1)


def pay_address(
    code: str,
    address: str,
    amount: Decimal | str,
    *,
    tag: str = "",
    outcome: str = "confirm",
    company: Company | None = None,
    sender: str = "sandbox-faucet",
) -> SandboxTransaction:
    """A transfer of `amount` from `sender` to `address` (and tag) on the sandbox chain of `code`: seen at
    once. With `company`, only that company's addresses are accepted (as the sandbox API does)."""
    return sandbox_deposit(
        company=company,
        code=code,
        address=address,
        tag=tag,
        amount=Decimal(amount),
        outcome=outcome,
        sender=sender,
    )


def pay(
    invoice: Invoice,
    amount: Decimal | str,
    *,
    outcome: str = "confirm",
    blocks: int = 0,
    confirm: bool = False,
) -> Invoice:
    """Send `amount` to the (filled) invoice's own address and mine `blocks` blocks on its chain, or as
    many as the asset needs to confirm with `confirm=True`; the invoice passed in is re-read, returned."""
    invoice.refresh_from_db()
    assert invoice.deposit_address is not None, "fill the invoice first"
    address = invoice.deposit_address
    pay_address(invoice.payment_code, address.address, amount, tag=address.tag, outcome=outcome)
    if confirm:
        blocks = max(blocks, get_asset(invoice.payment_code).confirmations)
    if blocks:
        mine(invoice.payment_code, blocks)
    invoice.refresh_from_db()
    return invoice


def mine(code: str | Invoice | None = None, count: int = 1) -> dict[str, int]:
    """`count` blocks on the sandbox chain of `code` (or of an invoice's code; every chain when None)."""
    if isinstance(code, Invoice):
        code = code.payment_code
    return sandbox_mine(count=count, codes=[code] if code else None)


def send_payouts(*codes: str) -> list[str]:
    """What the payout worker does with its messages: plan the due withdrawals of each code (of every code
    with one when none is given), then broadcast each stored transaction. Returns the txids sent."""
    chosen = codes or sorted(
        set(Withdrawal.objects.filter(status="processing", txid="").values_list("code", flat=True))
    )
    sent = []
    for code in chosen:
        for chain_tx_id in payout_plan(code):
            payout_broadcast(chain_tx_id)
            sent.append(ChainTx.objects.get(pk=chain_tx_id).txid)
    return sent


def fund(company: Company, code: str, amount: Decimal | str, *, reference: str | None = None) -> LedgerEntry:
    """Credit the company's balance as an operator adjustment would (a fresh reference unless given)."""
    return ledger_credit(
        company_id=company.pk,
        code=code,
        amount=Decimal(amount),
        kind=LedgerEntry.Kind.ADJUSTMENT,
        reference=reference or f"test-funding:{next(_funding)}",
    )


# --- through the sandbox API (for tests about HTTP) -----------------------------------------------------


def api_pay(
    client: Any,
    address: Mapping[str, Any] | str,
    amount: Any,
    outcome: str = "confirm",
    *,
    asset: str | None = None,
    tag: str | None = None,
) -> Any:
    """POST /api/sandbox/deposits: to an invoice's `address` object as the API returns it (address, tag,
    asset), or to an address string with `asset` (the payment code) and `tag`. `amount` is sent as given,
    so tests of the endpoint may send what it must refuse. Returns the response."""
    if isinstance(address, str):
        address = {"address": address, "asset": asset, "tag": tag}
    body = {
        "address": address["address"],
        "asset": asset or address["asset"],
        "amount": amount,
        "outcome": outcome,
    }
    if tag or address.get("tag"):
        body["tag"] = tag or address["tag"]
    return client.post("/api/sandbox/deposits", body, format="json")


def api_mine(client: Any, count: int = 1) -> Any:
    """POST /api/sandbox/blocks: `count` blocks on every sandbox chain."""
    return client.post("/api/sandbox/blocks", {"count": count}, format="json")


# --- on the TRON devnet ----------------------------------------------------------------------------------

SUN = 10**6  # trx and the devnet's USDT both have 6 decimals


class TronChain:
    """The TRON devnet with trx and trc20usdt configured on it (`nodes`, for CHAIN_NODES). A customer pays
    with a transfer it signs itself (alice by default); `scan` mines and runs one ingestion cycle."""

    # The devnet's client and keys are typed Any here: importing them would put the devnet's own modules
    # (a test server, outside the type-checked tree) under every type check that reaches these helpers.
    def __init__(self, devnet: Any) -> None:
        self.devnet = devnet
        self.customer = devnet.accounts["alice"]

    def nodes(self, **token: Any) -> dict[str, Any]:
        node = {"url": self.devnet.url, "network": "private"}
        return {
            "trx": dict(node),
            "trc20usdt": dict(node, contract=self.devnet.token, decimals=6, **token),
        }

    def pay(self, to: str, amount: Decimal | str, *, key: Any = None) -> str:
        """A signed TRX transfer of `amount` to `to`, broadcast (in the next block); its txid."""
        key = key or self.customer
        return self.send(key.sign(self.devnet.transfer(key, to, _units(amount))))

    def pay_token(
        self, to: str, amount: Decimal | str, *, key: Any = None, fee_limit: int = 100 * SUN
    ) -> str:
        """A signed TRC-20 transfer(to, amount) of the devnet's USDT, broadcast; its txid."""
        key = key or self.customer
        return self.send(key.sign(self.devnet.token_transfer(key, to, _units(amount), fee_limit=fee_limit)))

    def send(self, signed: dict[str, Any]) -> str:
        answer = self.devnet.send(signed)
        assert answer.get("result") is True, answer
        return str(signed["txID"])

    def mine(self, blocks: int = 1) -> int:
        """`blocks` blocks; the head's height."""
        return int(self.devnet.mine(blocks)["head"])

    def fork(self, depth: int) -> list[str]:
        """Drop the last `depth` (unsolidified) blocks and the pending transactions; their txids."""
        return list(self.devnet.fork(depth)["dropped"])

    def keep_time(self) -> None:
        """Bring the devnet's clock (its genesis is 2026-01-01) to ours: the signer checks a transaction's
        expiration by its own clock."""
        head = self.devnet.post("wallet/getnowblock")["block_header"]["raw_data"]["timestamp"]
        behind = int(time.time() * 1000) - int(head)
        if behind > 0:
            self.devnet.mine(skip_seconds=behind // 1000 + 1)

    def scan(self, blocks: int = 0) -> int:
        """Mine `blocks`, then one ingestion cycle of the TRON codes (trx leads their shared cursor)."""
        if blocks:
            self.mine(blocks)
        return chain_scan("trx")


# --- on the TON devnet -----------------------------------------------------------------------------------


class TonChain:
    """The TON devnet with ton configured on it (`nodes`, for CHAIN_NODES) and a house wallet of a fresh key
    (`public_key` for CHAIN_XPUBS["ton"]; `seed`, its private key, for the house's own transfers). A customer
    (a wallet the devnet signs for) pays; `scan` runs one ingestion cycle."""

    def __init__(self, devnet: Any) -> None:
        self.devnet = devnet
        self.seed = secrets.token_bytes(32)
        self.public_key = public_key_of(self.seed)
        self.house = wallet_v4r2_address(self.public_key).to_str(is_bounceable=False, is_url_safe=True)
        self.customer = devnet.customer()
        self.client = TonCenter(devnet.api_url)

    def nodes(self) -> dict[str, Any]:
        return {"ton": {"url": self.devnet.api_url, "network": "private"}}

    def xpubs(self) -> dict[str, str]:
        return {"ton": self.public_key.hex()}

    def pay(
        self,
        amount: Decimal | str,
        comment: str | None = None,
        *,
        to: str | None = None,
        bounce: bool | None = None,
        customer: str | None = None,
    ) -> str:
        """The customer pays `amount` TON to the house (or `to`) with `comment`; the receiving transaction's
        hash (hex, the deposit's txid)."""
        target = to or self.house
        sent = self.devnet.pay(
            customer or self.customer, target, to_nanotons(Decimal(amount)), comment=comment, bounce=bounce
        )
        return _received(sent, target)

    def house_sends(self, to: str, amount: Decimal | str, *, bounce: bool | None = None) -> str:
        """The house wallet pays `amount` TON to `to` (deployed by its first message); the hash of the
        house's transaction (an external message in, a payment out)."""
        seqno = self.client.seqno(self.house)
        message = external_transfer(
            self.seed,
            TonTransfer(to, to_nanotons(Decimal(amount)), bounce=bounce),
            seqno=seqno,
            valid_until=self.devnet.now() + 60,
            with_state_init=seqno == 0,
        )
        self.client.send_boc(message.boc)
        [newest] = self.client.transactions(self.house, limit=1)
        return newest.id.hash.hex()

    def send_body(self, to: str, amount: Decimal | str, body: Cell) -> str:
        """A wallet whose key the test holds sends `amount` TON to `to` with a raw `body` (a contract call a
        wallet app would never make: a forged jetton notification, say); the receiving transaction's hash."""
        seed = secrets.token_bytes(32)
        wallet = self.devnet.house_wallet(public_key_of(seed))["address"]
        signing = (
            begin_cell()
            .store_uint(DEFAULT_WALLET_ID, 32)
            .store_uint(self.devnet.now() + 60, 32)
            .store_uint(self.client.seqno(wallet), 32)
            .store_uint(0, 8)
            .store_uint(DEFAULT_SEND_MODE, 8)
            .store_ref(internal_message(Address(to), to_nanotons(Decimal(amount)), bounce=False, body=body))
            .end_cell()
        )
        signed = begin_cell().store_bytes(SigningKey(seed).sign(signing.hash).signature).store_cell(signing)
        message = (
            begin_cell()
            .store_uint(2, 2)
            .store_address(None)
            .store_address(Address(wallet))
            .store_coins(0)
            .store_bit(0)
            .store_bit(1)
            .store_ref(signed.end_cell())
            .end_cell()
        )
        self.client.send_boc(message.to_boc())
        [newest] = self.client.transactions(to, limit=1)
        return newest.id.hash.hex()

    def scan(self) -> int:
        """One ingestion cycle of ton."""
        return chain_scan("ton")


def _received(sent: dict[str, Any], to: str) -> str:
    wanted = Address(to).hash_part
    # The first transaction of `to` in the batch takes the payment (a bounce may follow on the sender's side).
    first = next(tx for tx in sent["transactions"] if Address(tx["address"]).hash_part == wanted)
    return base64.b64decode(first["hash"]).hex()


def _units(amount: Decimal | str) -> int:
    units = Decimal(amount) * SUN
    assert units == units.to_integral_value(), f"{amount} has more than 6 decimal places"
    return int(units)


# --- on the Solana devnet --------------------------------------------------------------------------------

LAMPORTS = 10**9


class SolanaChain:
    """The Solana devnet with sol configured on it (`nodes` for CHAIN_NODES, `xpubs` for CHAIN_XPUBS: the
    house's receiving address, a wallet of its own). The devnet's customer pays as a Solana Pay wallet
    does; `scan` produces slots and runs one ingestion cycle."""

    # A payment sent now lands in the next slot, finalized once 31 more follow it: 32 slots from now.
    FINAL_SLOTS = 32

    def __init__(self, devnet: Any) -> None:
        self.devnet = devnet
        seed = hashlib.sha256(b"kassa tests: the solana receiving wallet").digest()
        self.hot = str(Keypair.from_seed(seed).pubkey())

    def nodes(self) -> dict[str, Any]:
        return {"sol": {"url": self.devnet.url, "network": "private"}}

    def xpubs(self) -> dict[str, str]:
        return {"sol": self.hot}

    def pay(
        self,
        amount: Decimal | str,
        *,
        to: str | None = None,
        references: tuple[str, ...] = (),
        memo: str | None = None,
        memo_program: str = "v3",
        lands: bool = True,
    ) -> str:
        """The customer's transfer of `amount` SOL (to the receiving address unless `to`), in the working
        bank; its signature. `lands=False`: it must land failed (e.g. more than the customer has)."""
        fields: dict[str, Any] = {"references": list(references), "memo_program": memo_program}
        if memo is not None:
            fields["memo"] = memo
        sent = self.devnet.pay(to or self.hot, _lamports(amount), **fields)
        assert sent["landed"] and (sent["err"] is None) == lands, sent
        return str(sent["signature"])

    def mine(self, slots: int = 1) -> int:
        """`slots` slots (the first confirms the working bank's transactions); the head slot."""
        return int(self.devnet.mine(slots)["slot"])

    def scan(self, slots: int = 0) -> int:
        """Produce `slots` slots, then one ingestion cycle of sol."""
        if slots:
            self.mine(slots)
        return chain_scan("sol")


class NearChain:
    """The NEAR stub with near configured on it: the hot account is the development hot key's implicit
    account (the in-process signer's), funded at genesis. Customers pay from the stub's faucet, directly or
    through its contract; `scan` produces blocks and runs one ingestion cycle."""

    # A transfer sent now: in the next block, its receipt executed in the one after, final two blocks later.
    FINAL_BLOCKS = 4

    def __init__(self, devnet: Any, hot_funds: Decimal | str = "100") -> None:
        from chains.near.keys import development_hot_public_key
        from chains.near.transaction import implicit_account

        self.devnet = devnet
        key = development_hot_public_key()
        self.hot = implicit_account(key)
        devnet.account(self.hot, _yocto(hot_funds), public_key=key.hex())

    def nodes(self) -> dict[str, Any]:
        return {"near": {"url": self.devnet.url, "network": "private"}}

    def pay(self, amount: Decimal | str, to: str, *, contract: bool = False) -> str:
        """A payment of `amount` NEAR to `to`: the faucet's transfer (its tx hash), or a contract's receipt
        made blocks after its transaction (`contract`: the receipt's id)."""
        if contract:
            return str(self.devnet.contract_transfer(to, _yocto(amount))["receipt_id"])
        return str(self.devnet.transfer(to, _yocto(amount)))

    def scan(self, blocks: int = 0) -> int:
        """Produce `blocks` blocks, then one ingestion cycle of near."""
        if blocks:
            self.devnet.produce(blocks)
        return chain_scan("near")


def _yocto(amount: Decimal | str) -> int:
    yocto = Decimal(amount).scaleb(24)
    assert yocto == yocto.to_integral_value(), f"{amount} is finer than a yoctoNEAR"
    return int(yocto)


def _lamports(amount: Decimal | str) -> int:
    lamports = Decimal(amount) * LAMPORTS
    assert lamports == lamports.to_integral_value(), f"{amount} has more than 9 decimal places"
    return int(lamports)


def available(company: Company, code: str) -> Decimal:
    """The company's available balance in `code` (0 without an account)."""
    account = Account.objects.filter(company=company, code=code).first()
    return account.available if account else Decimal(0)


def webhook_statuses(family: str, object_id: str) -> list[str]:
    """The `status` of each webhook event written for the object, oldest first."""
    rows = WebhookEvent.objects.filter(family=family, object_id=object_id).order_by("created_at", "pk")
    return [json.loads(row.body)["status"] for row in rows]
