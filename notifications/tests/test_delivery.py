from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chains.deposit_reversals import deposit_reverse
from notifications import delivery
from notifications.models import Kind, Notification
from notifications.preferences import preference_set, receipts_set
from notifications.tests.conftest import run_sender
from payments.roles import FINANCE, VIEWER
from payments.tokens import api_token_create
from tests import chain
from tests.factories import DepositFactory, InvoiceFactory, MemberFactory, WithdrawalFactory

pytestmark = pytest.mark.django_db


def _parts(message):
    text = message.get_body(preferencelist=("plain",)).get_content()
    html = message.get_body(preferencelist=("html",)).get_content()
    return text, html


def _to(messages):
    return sorted(str(m["To"]) for m in messages)


def test_a_paid_invoice_mails_each_subscribed_member_once_in_their_language(smtp):
    invoice = InvoiceFactory(code="btc")
    company = invoice.company
    spanish = MemberFactory(company=company, role=FINANCE, email="es@shop.test")
    preference_set(user=spanish.user, kinds=[Kind.INVOICE_PAID], language="es")
    MemberFactory(company=company, role=VIEWER, email="viewer@shop.test")  # invoice paid: off by default

    chain.pay(invoice, invoice.amount_due, confirm=True)
    sent = run_sender()
    again = run_sender()

    messages = smtp.wait_for(2)
    assert (sent, again) == (2, 0)
    assert _to(messages) == sorted([company.owner.email, "es@shop.test"])
    by_to = {str(m["To"]): m for m in messages}
    text, html = _parts(by_to["es@shop.test"])
    assert "Factura pagada" in str(by_to["es@shop.test"]["Subject"])
    assert str(invoice.pk) in text and "<table>" in html
    owner_text, _ = _parts(by_to[company.owner.email])
    assert "Invoice paid" in str(by_to[company.owner.email]["Subject"]) and "is paid" in owner_text
    assert Notification.objects.filter(kind=Kind.INVOICE_PAID).count() == 2


def test_the_client_receipt_is_sent_only_when_the_company_turned_it_on(smtp):
    off = InvoiceFactory(code="btc", client_email="a@client.test")
    on = InvoiceFactory(code="btc", client_email="b@client.test")
    receipts_set(company=on.company, enabled=True)

    for invoice in (off, on):
        invoice.refresh_from_db()
        chain.pay(invoice, invoice.amount_due, confirm=True)
    run_sender()

    recipients = _to(smtp.wait_for(3))
    assert "b@client.test" in recipients and "a@client.test" not in recipients
    assert Notification.objects.filter(kind=Kind.RECEIPT).count() == 1


def test_a_wrong_invoice_asks_for_a_decision(smtp):
    invoice = InvoiceFactory(code="btc")

    chain.pay(invoice, "0.0001", confirm=True)  # far short of the due amount
    run_sender()

    (message,) = smtp.wait_for(1)
    assert "needs your decision" in str(message["Subject"])
    assert "less than was due" in _parts(message)[0]


def test_withdrawals_done_and_rejected_are_mailed(smtp):
    done = WithdrawalFactory(status="done")
    WithdrawalFactory(company=done.company, status="rejected")

    run_sender()

    subjects = sorted(str(m["Subject"]) for m in smtp.wait_for(2))
    assert [s.split()[-1] for s in subjects] == ["done", "rejected"]


def test_a_reversed_credited_deposit_is_mailed_once(smtp):
    deposit = DepositFactory(confirm=True)

    deposit_reverse(deposit_id=deposit.pk)
    deposit_reverse(deposit_id=deposit.pk)
    run_sender()

    (message,) = smtp.wait_for(1)
    assert deposit.txid in _parts(message)[0]


def test_a_token_created_mail_never_contains_the_token(smtp):
    company = InvoiceFactory().company

    issued = api_token_create(company_id=company.pk, name="shop backend", scopes=["invoices:read"])
    run_sender()

    (message,) = smtp.wait_for(1)
    text, html = _parts(message)
    assert "shop backend" in text
    for secret in (issued.secret, issued.token.token_prefix):
        assert secret not in message.as_string() and secret not in text and secret not in html


def test_smtp_down_is_retried_later_with_backoff(smtp, monkeypatch):
    WithdrawalFactory(status="rejected")
    smtp.refusing = True

    assert run_sender() == 0
    row = Notification.objects.get()
    assert (row.status, row.attempt_count) == (Notification.Status.PENDING, 1)
    assert row.next_attempt_at > timezone.now() and "421" in row.last_error
    assert run_sender() == 0 and smtp.refused == 1  # not due yet: the backoff holds it
    smtp.refusing = False
    later = timezone.now() + timedelta(seconds=11)
    monkeypatch.setattr(delivery, "_now", lambda: later)

    assert run_sender() == 1

    assert len(smtp.wait_for(1)) == 1
    row.refresh_from_db()
    assert (row.status, row.attempt_count) == (Notification.Status.SENT, 2)


def test_with_email_off_nothing_is_queued(smtp, settings):
    settings.EMAIL_ENABLED = False

    WithdrawalFactory(status="rejected")

    assert not Notification.objects.exists()
    assert run_sender() == 0 and smtp.messages == []


def test_every_kind_renders_text_and_html_in_each_language():
    for kind in Kind:
        for language in ("en", "es", "ru"):
            row = Notification(kind=kind, recipient="x@shop.test", language=language, context={"uid": "W-1"})
            message = delivery.notification_message(row)
            assert message.subject and message.body and message.alternatives
