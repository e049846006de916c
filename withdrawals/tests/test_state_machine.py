"""The withdrawal state machine: every transition the table does not allow is refused and changes nothing."""

from __future__ import annotations

import pytest

from core.errors import InvalidState
from payments.models import Account, LedgerEntry
from tests.factories import WithdrawalFactory
from webhooks.models import WebhookEvent
from withdrawals import services
from withdrawals.models import Withdrawal
from withdrawals.services import TRANSITIONS

pytestmark = pytest.mark.django_db

CALLS = {
    "complete": lambda uid: services.withdrawal_complete(uid=uid),
    "reject": lambda uid: services.withdrawal_reject(uid=uid, reason="test"),
}
DISALLOWED = [
    (name, status)
    for name, (sources, _) in TRANSITIONS.items()
    for status in Withdrawal.Status.values
    if status not in sources
]


def test_every_transition_has_its_function():
    assert set(CALLS) == set(TRANSITIONS)


@pytest.mark.parametrize(("name", "status"), DISALLOWED, ids=[f"{n}-from-{s}" for n, s in DISALLOWED])
def test_a_transition_the_table_does_not_allow_is_refused(name, status):
    withdrawal = WithdrawalFactory()
    Withdrawal.objects.filter(pk=withdrawal.pk).update(status=status, txid="abc")
    before = Withdrawal.objects.values().get(pk=withdrawal.pk)
    balances = list(Account.objects.values_list("available", "held"))
    counts = (WebhookEvent.objects.count(), LedgerEntry.objects.count())

    if status == TRANSITIONS[name][1]:
        CALLS[name](withdrawal.uid)  # a repeat of what already happened: the same answer
    else:
        with pytest.raises(InvalidState):
            CALLS[name](withdrawal.uid)

    assert Withdrawal.objects.values().get(pk=withdrawal.pk) == before
    assert list(Account.objects.values_list("available", "held")) == balances
    assert (WebhookEvent.objects.count(), LedgerEntry.objects.count()) == counts


@pytest.mark.parametrize("name", list(TRANSITIONS))
def test_an_allowed_transition_reaches_its_target(name):
    withdrawal = WithdrawalFactory()
    Withdrawal.objects.filter(pk=withdrawal.pk).update(txid="abc")
    CALLS[name](withdrawal.uid)
    withdrawal.refresh_from_db()
    assert withdrawal.status == TRANSITIONS[name][1]


def test_unsent_clears_the_txid_of_a_processing_withdrawal_and_leaves_others_alone():
    withdrawal = WithdrawalFactory()
    Withdrawal.objects.filter(pk=withdrawal.pk).update(txid="abc")
    done = WithdrawalFactory()
    Withdrawal.objects.filter(pk=done.pk).update(status=Withdrawal.Status.DONE, txid="def")
    counts = (WebhookEvent.objects.count(), LedgerEntry.objects.count())

    services.withdrawal_unsent(uid=withdrawal.uid)
    services.withdrawal_unsent(uid=withdrawal.uid)  # a repeat: nothing more
    services.withdrawal_unsent(uid=done.uid)

    withdrawal.refresh_from_db()
    done.refresh_from_db()
    assert (withdrawal.status, withdrawal.txid, withdrawal.broadcast_at) == (
        Withdrawal.Status.PROCESSING,
        "",
        None,
    )
    assert (done.status, done.txid) == (Withdrawal.Status.DONE, "def")
    assert (WebhookEvent.objects.count(), LedgerEntry.objects.count()) == counts
