"""Exact bodies: keys in the documented order, types per docs/decisions.md, compact, non-ASCII kept."""

import json
from decimal import Decimal

import pytest

from chains.deposit_events import deposit_body
from core import jsonutil
from invoices.events import INVOICE_MESSAGES, invoice_body
from withdrawals.events import withdrawal_body


@pytest.mark.parametrize(
    "status", ["created", "pending", "processing", "done", "wrong", "refunded", "closed"]
)
def test_invoice_body_fields_in_order(status):
    body = jsonutil.dumps(invoice_body(invoice_id="3f0c2a", status=status))

    assert body == f'{{"invoiceId":"3f0c2a","status":"{status}","message":"{INVOICE_MESSAGES[status]}"}}'


def test_invoice_body_refuses_unknown_status():
    with pytest.raises(KeyError):
        invoice_body(invoice_id="x", status="paid")


def _withdrawal(status, tx_hash="https://tronscan.org/#/transaction/abc"):
    return withdrawal_body(
        status=status,
        asset="usdt",
        dchain="trc20usdt",
        amount=Decimal("10.50"),
        fee=Decimal("1.000000"),
        to="TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
        tx_hash=tx_hash,
        uid="007-1042",
    )


def test_withdrawal_body_first_processing_has_empty_tx_hash_and_number_amount():
    body = jsonutil.dumps(_withdrawal("processing", tx_hash=""))

    assert body == (
        '{"type":"withdrawal","status":"processing","asset":"usdt","dchain":"trc20usdt","amount":10.5,'
        '"fee":"1","to":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","txHash":"","uid":"007-1042"}'
    )


def test_withdrawal_body_done_carries_the_link():
    parsed = json.loads(jsonutil.dumps(_withdrawal("done")))

    assert list(parsed) == ["type", "status", "asset", "dchain", "amount", "fee", "to", "txHash", "uid"]
    assert parsed["txHash"] == "https://tronscan.org/#/transaction/abc"
    assert isinstance(parsed["amount"], float | int)
    assert isinstance(parsed["fee"], str)


def test_withdrawal_body_rejected_has_no_tx_hash_key():
    parsed = json.loads(jsonutil.dumps(_withdrawal("rejected")))

    assert list(parsed) == ["type", "status", "asset", "dchain", "amount", "fee", "to", "uid"]


def test_withdrawal_amount_is_exact_for_tiny_and_large_values():
    tiny = jsonutil.dumps(
        {
            "amount": withdrawal_body(
                status="done",
                asset="btc",
                dchain="btc",
                amount=Decimal("0.00012000"),
                fee=Decimal("0.0001"),
                to="x",
                tx_hash="l",
                uid="001-1",
            )["amount"]
        }
    )
    large = jsonutil.dumps({"amount": Decimal("123456789012345678.123456789012345678")})

    assert tiny == '{"amount":0.00012}'
    assert large == '{"amount":123456789012345678.123456789012345678}'


def _deposit(**overrides):
    fields = dict(
        amount=Decimal("0.01500000"),
        asset="btc",
        network="btc",
        deposit_address="bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu",
        status="done",
        address_id="9d1c",
        internal_user_id="user-42",
        tx_hash="e3b0c442",
        email="josé@example.com",
        fee_payer="merchant",
    )
    fields.update(overrides)
    return deposit_body(**fields)


def test_deposit_body_fields_in_order_with_string_amount_and_unicode_kept():
    body = jsonutil.dumps(_deposit())

    assert body == (
        '{"amount":"0.015","asset":"btc","network":"btc",'
        '"depositAddress":"bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu","status":"done","id":"9d1c",'
        '"internal_user_id":"user-42","hash":"e3b0c442","email":"josé@example.com","feePayer":"merchant"}'
    )


@pytest.mark.parametrize("email", [None, ""])
def test_deposit_body_omits_email_when_none(email):
    parsed = json.loads(jsonutil.dumps(_deposit(email=email)))

    assert "email" not in parsed
    assert list(parsed)[-1] == "feePayer"


@pytest.mark.parametrize(("field", "value"), [("status", "done!"), ("fee_payer", "client")])
def test_deposit_body_refuses_unknown_values(field, value):
    with pytest.raises(ValueError):
        _deposit(**{field: value})
