"""The external message of a wallet v4R2 transfer: one internal message (TON, with a text comment or none),
signed with the wallet's ed25519 key, to be sent with toncenter's sendBocReturnHash.

The wallet contract accepts it once: it checks the signature, `wallet_id`, that `seqno` is its stored one
(then stores seqno + 1) and that `valid_until` is still ahead of the chain's time. So a message sent twice
moves TON once, and one not taken before `valid_until` never will be: a payout that is not seen in the
wallet's transactions by then can be built again with the wallet's current seqno.

The bytes are @ton/ton's (WalletContractV4.createTransfer and @ton/core's storeMessage); the tests compare
them byte for byte (chains/ton/tests/test_wallet.py).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from nacl.signing import SigningKey
from pytoniq_core import Address, Builder, Cell, begin_cell

from chains.ton.units import MAX_NANOTONS

# The wallet v4R2 code (its hash: /rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=, toncenter's "wallet v4 r2").
WALLET_V4R2_CODE = Cell.one_from_boc(
    base64.b64decode(
        "te6ccgECFAEAAtQAART/APSkE/S88sgLAQIBIAIDAgFIBAUE+PKDCNcYINMf0x/THwL4I7vyZO1E0NMf0x/T//QE0VFDuvKhUVG6"
        "8qIF+QFUEGT5EPKj+AAkpMjLH1JAyx9SMMv/UhD0AMntVPgPAdMHIcAAn2xRkyDXSpbTB9QC+wDoMOAhwAHjACHAAuMAAcADkTDj"
        "DQOkyMsfEssfy/8QERITAubQAdDTAyFxsJJfBOAi10nBIJJfBOAC0x8hghBwbHVnvSKCEGRzdHK9sJJfBeAD+kAwIPpEAcjKB8v/"
        "ydDtRNCBAUDXIfQEMFyBAQj0Cm+hMbOSXwfgBdM/yCWCEHBsdWe6kjgw4w0DghBkc3RyupJfBuMNBgcCASAICQB4AfoA9AQw+Cdv"
        "IjBQCqEhvvLgUIIQcGx1Z4MesXCAGFAEywUmzxZY+gIZ9ADLaRfLH1Jgyz8gyYBA+wAGAIpQBIEBCPRZMO1E0IEBQNcgyAHPFvQA"
        "ye1UAXKwjiOCEGRzdHKDHrFwgBhQBcsFUAPPFiP6AhPLassfyz/JgED7AJJfA+ICASAKCwBZvSQrb2omhAgKBrkPoCGEcNQICEek"
        "k30pkQzmkD6f+YN4EoAbeBAUiYcVnzGEAgFYDA0AEbjJftRNDXCx+AA9sp37UTQgQFA1yH0BDACyMoHy//J0AGBAQj0Cm+hMYAIB"
        "IA4PABmtznaiaEAga5Drhf/AABmvHfaiaEAQa5DrhY/AAG7SB/oA1NQi+QAFyMoHFcv/ydB3dIAYyMsFywIizxZQBfoCFMtrEszM"
        "yXP7AMhAFIEBCPRR8qcCAHCBAQjXGPoA0z/IVCBHgQEI9FHyp4IQbm90ZXB0gBjIywXLAlAGzxZQBPoCFMtqEssfyz/Jc/sAAgBs"
        "gQEI1xj6ANM/MFIkgQEI9Fnyp4IQZHN0cnB0gBjIywXLAlAFzxZQA/oCE8tqyx8Syz/Jc/sAAAr0AMntVA=="
    )
)
DEFAULT_WALLET_ID = 698983191  # + the workchain, as every wallet app derives it
# Pay the forward fees apart from the value, and do not fail the whole transaction if this message can't go.
SEND_MODE_PAY_FEES_SEPARATELY = 1
SEND_MODE_IGNORE_ERRORS = 2
DEFAULT_SEND_MODE = SEND_MODE_PAY_FEES_SEPARATELY | SEND_MODE_IGNORE_ERRORS
MAX_UINT32 = 2**32 - 1


def wallet_v4r2_data(public_key: bytes, wallet_id: int = DEFAULT_WALLET_ID) -> Cell:
    """The initial data of a wallet v4R2: seqno 0, wallet_id, the public key, no plugins."""
    if len(public_key) != 32:
        raise ValueError("an ed25519 public key is 32 bytes")
    return (
        begin_cell()
        .store_uint(0, 32)
        .store_uint(wallet_id, 32)
        .store_bytes(public_key)
        .store_bit(0)
        .end_cell()
    )


def wallet_v4r2_state_init(public_key: bytes, wallet_id: int = DEFAULT_WALLET_ID) -> Cell:
    """StateInit: no split_depth, no special, code, data, no library."""
    return (
        begin_cell()
        .store_bit(0)
        .store_bit(0)
        .store_maybe_ref(WALLET_V4R2_CODE)
        .store_maybe_ref(wallet_v4r2_data(public_key, wallet_id))
        .store_bit(0)
        .end_cell()
    )


def wallet_v4r2_address(public_key: bytes, wallet_id: int = DEFAULT_WALLET_ID, workchain: int = 0) -> Address:
    return Address((workchain, wallet_v4r2_state_init(public_key, wallet_id).hash))


def public_key_of(seed: bytes) -> bytes:
    """The ed25519 public key of a 32-byte private key (seed)."""
    return bytes(SigningKey(seed).verify_key)


def comment_body(text: str) -> Cell:
    """A text comment: op 0, then the UTF-8 bytes as a snake string (123 bytes in the first cell, 127 in each
    next one), as @ton/core's comment() writes it."""
    data = text.encode("utf-8")
    first = (1023 - 32) // 8
    chunks = [data[:first]] + [data[i : i + 127] for i in range(first, len(data), 127)]
    tail: Cell | None = None
    for chunk in reversed(chunks[1:]):
        builder = begin_cell().store_bytes(chunk)
        if tail is not None:
            builder.store_ref(tail)
        tail = builder.end_cell()
    root = begin_cell().store_uint(0, 32).store_bytes(chunks[0])
    if tail is not None:
        root.store_ref(tail)
    return root.end_cell()


def _store_body(builder: Builder, body: Cell) -> None:
    """Either X ^X: inline when it fits (and is ordinary), else a reference (@ton/core's rule)."""
    if (
        builder.available_bits - 1 >= len(body.bits)
        and len(builder.refs) + len(body.refs) <= 4
        and not body.is_exotic
    ):
        builder.store_bit(0)
        builder.store_cell(body)
    else:
        builder.store_bit(1)
        builder.store_ref(body)


def internal_message(destination: Address, amount: int, *, bounce: bool, body: Cell | None) -> Cell:
    """A MessageRelaxed with int_msg_info: ihr disabled, no source (the wallet fills it), no init."""
    if not 0 <= amount <= MAX_NANOTONS:
        raise ValueError("the amount is 0 .. 2**120 - 1 nanotons")
    builder = (
        begin_cell()
        .store_bit(0)  # int_msg_info$0
        .store_bit(1)  # ihr_disabled
        .store_bit(1 if bounce else 0)
        .store_bit(0)  # bounced
        .store_address(None)  # src: addr_none
        .store_address(destination)
        .store_coins(amount)
        .store_bit(0)  # no extra currencies
        .store_coins(0)  # ihr_fee
        .store_coins(0)  # fwd_fee
        .store_uint(0, 64)  # created_lt
        .store_uint(0, 32)  # created_at
        .store_bit(0)  # no init
    )
    _store_body(builder, body if body is not None else Cell.empty())
    return builder.end_cell()


@dataclass(frozen=True)
class Transfer:
    """One payment: `amount` nanotons to `destination` (any form), with a text `comment` or none. `bounce`
    None follows the destination's own form (UQ... non-bounceable, EQ... and raw bounceable)."""

    destination: str
    amount: int
    comment: str | None = None
    bounce: bool | None = None
    send_mode: int = DEFAULT_SEND_MODE

    def bounceable(self) -> bool:
        if self.bounce is not None:
            return self.bounce
        if ":" in self.destination:
            return True
        return bool(Address(self.destination).is_bounceable)


@dataclass(frozen=True)
class SignedExternal:
    boc: bytes  # the external message, to send
    hash: bytes  # of the message cell (sendBocReturnHash's `hash`)
    hash_norm: bytes  # TEP-467's normalized hash (its `hash_norm`): the same for any re-wrapping
    wallet: str  # wc:hex of the wallet
    seqno: int
    valid_until: int


def signing_message(
    transfer: Transfer, *, seqno: int, valid_until: int, wallet_id: int = DEFAULT_WALLET_ID
) -> Builder:
    if not 0 <= seqno <= MAX_UINT32 or not 0 <= valid_until <= MAX_UINT32:
        raise ValueError("seqno and valid_until are uint32")
    if not 0 <= transfer.send_mode <= 255:
        raise ValueError("send_mode is uint8")
    body = comment_body(transfer.comment) if transfer.comment is not None else None
    message = internal_message(
        Address(transfer.destination), transfer.amount, bounce=transfer.bounceable(), body=body
    )
    return (
        begin_cell()
        .store_uint(wallet_id, 32)
        .store_uint(valid_until, 32)
        .store_uint(seqno, 32)
        .store_uint(0, 8)  # op: simple send
        .store_uint(transfer.send_mode, 8)
        .store_ref(message)
    )


def external_transfer(
    seed: bytes,
    transfer: Transfer,
    *,
    seqno: int,
    valid_until: int,
    wallet_id: int = DEFAULT_WALLET_ID,
    workchain: int = 0,
    with_state_init: bool = False,
) -> SignedExternal:
    """The signed external message of the wallet v4R2 of private key `seed` (32 bytes) making `transfer`.
    `with_state_init` (seqno 0 only) deploys the wallet with the same message."""
    if len(seed) != 32:
        raise ValueError("an ed25519 private key (seed) is 32 bytes")
    if with_state_init and seqno != 0:
        raise ValueError("only the first message (seqno 0) carries the state init")
    public_key = public_key_of(seed)
    wallet = wallet_v4r2_address(public_key, wallet_id, workchain)
    unsigned = signing_message(transfer, seqno=seqno, valid_until=valid_until, wallet_id=wallet_id)
    signature = SigningKey(seed).sign(unsigned.end_cell().hash).signature
    body = begin_cell().store_bytes(signature).store_cell(unsigned.end_cell()).end_cell()

    builder = begin_cell().store_uint(2, 2).store_address(None).store_address(wallet).store_coins(0)
    if with_state_init:
        init = wallet_v4r2_state_init(public_key, wallet_id)
        builder.store_bit(1)
        if builder.available_bits - 2 < len(init.bits) + len(body.bits):  # @ton/core's storeMessage
            builder.store_bit(1).store_ref(init)
        else:
            builder.store_bit(0).store_cell(init)
    else:
        builder.store_bit(0)
    if builder.available_bits - 1 < len(body.bits) or len(builder.refs) + len(body.refs) > 4:
        builder.store_bit(1).store_ref(body)
    else:
        builder.store_bit(0).store_cell(body)
    message = builder.end_cell()
    return SignedExternal(
        boc=message.to_boc(),
        hash=message.hash,
        hash_norm=normalized_hash(wallet, body),
        wallet=f"{wallet.wc}:{wallet.hash_part.hex()}",
        seqno=seqno,
        valid_until=valid_until,
    )


def normalized_hash(destination: Address, body: Cell) -> bytes:
    """TEP-467: the hash of ext_in_msg_info with no source, import fee nor init, and the body a reference."""
    return (
        begin_cell()
        .store_uint(2, 2)
        .store_address(None)
        .store_address(destination)
        .store_coins(0)
        .store_bit(0)
        .store_bit(1)
        .store_ref(body)
        .end_cell()
        .hash
    )
