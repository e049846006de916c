from __future__ import annotations

import pytest
from django.contrib.auth.signals import user_logged_in
from django.test import RequestFactory
from django.urls import reverse

from notifications.models import Kind, Notification
from notifications.preferences import receipts_set
from notifications.tests.conftest import run_sender
from payments.roles import DEVELOPER, FINANCE, OWNER, VIEWER
from tests.factories import (
    InvoiceFactory,
    MemberFactory,
    PayoutPolicyFactory,
    TotpDeviceFactory,
    WithdrawalFactory,
)

pytestmark = pytest.mark.django_db

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def _login(user, agent: str, ip: str) -> None:
    request = RequestFactory().get("/dashboard/", HTTP_USER_AGENT=agent, REMOTE_ADDR=ip)
    user_logged_in.send(sender=type(user), request=request, user=user)


def test_a_login_from_a_new_device_tells_that_user_only(smtp):
    member = MemberFactory(role=VIEWER, email="v@shop.test")
    _login(member.user, FIREFOX, "203.0.113.7")  # the first: every device is new, nobody is told
    _login(member.user, FIREFOX, "203.0.113.99")  # the same /24

    _login(member.user, "curl/8.0", "198.51.100.1")
    run_sender()

    (message,) = smtp.wait_for(1)
    assert str(message["To"]) == "v@shop.test" and "198.51.100.0/24" in message.as_string()
    assert Notification.objects.filter(kind=Kind.NEW_DEVICE).count() == 1


def test_a_withdrawal_held_for_approval_is_mailed_to_those_who_want_it(smtp):
    company = InvoiceFactory().company
    TotpDeviceFactory(user=company.owner)
    PayoutPolicyFactory(company=company, limits={"btc": {"approval_above": "0.0001"}})
    MemberFactory(company=company, role=DEVELOPER)  # held withdrawals: off by default

    WithdrawalFactory(company=company, amount="0.001")
    run_sender()

    (message,) = smtp.wait_for(1)
    assert "waits for an approval" in str(message["Subject"])
    assert str(message["To"]) == company.owner.email


@pytest.mark.parametrize(("enabled", "promised"), [(False, False), (True, True)])
def test_the_pay_page_promises_a_receipt_only_when_one_is_sent(client, enabled, promised):
    invoice = InvoiceFactory()
    receipts_set(company=invoice.company, enabled=enabled)

    page = client.get(reverse("pay", args=[invoice.pk])).content.decode()

    assert ("For your receipt" in page) is promised


def test_a_member_chooses_their_own_notifications_and_only_settings_switch_receipts(client):
    finance = MemberFactory(role=FINANCE)
    client.force_login(finance.user)
    url = reverse("dashboard:notification_settings")

    page = client.get(url)
    answer = client.post(url, {"kinds": [Kind.INVOICE_PAID], "language": "ru", "receipts": "on"})

    assert page.status_code == 200 and answer.status_code == 302
    pref = finance.user.notification_preference
    assert (pref.kinds, pref.language) == ([Kind.INVOICE_PAID], "ru")
    assert not hasattr(finance.company, "notification_settings")  # finance may not change settings


def test_an_owner_turns_receipts_on(client):
    owner = MemberFactory(role=OWNER)
    client.force_login(owner.user)

    client.post(reverse("dashboard:notification_settings"), {"language": "en", "receipts": "on"})

    owner.company.refresh_from_db()
    assert owner.company.notification_settings.receipts_enabled
