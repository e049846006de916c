"""Unrouted deposits as people see them: the staff page and its confirmed actions, the merchant's payment
claims, `manage.py chain unrouted` and the `/metrics` gauge."""
# ruff: noqa: F811 - the fixtures imported from tests.dashboard are this module's test parameters

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from chains.claims import CLAIMS_PER_DAY, txid_check
from chains.derivation import ton_deposit_address
from chains.models import ClaimStatus, DepositClaim, UnroutedDeposit
from core.errors import ValidationFailed
from invoices.models import Invoice
from tests.dashboard import (  # noqa: F401 - fixtures
    Dash,
    anon_dash,
    dash,
    dashboard_rates,
    text,
)
from tests.factories import DepositClaimFactory, InvoiceFactory, UnroutedDepositFactory, UserFactory
from withdrawals.models import Withdrawal
from withdrawals.tests.conftest import ADDRESSES

pytestmark = pytest.mark.django_db
Status = UnroutedDeposit.Status
METRICS_TOKEN = "metrics-token-for-tests-0123456789abcdef"


@pytest.fixture
def staff() -> Dash:
    client = Dash()
    client.client.force_login(UserFactory(is_staff=True))
    client.get("/dashboard/unrouted/")  # a rendered form sets the CSRF cookie (an operator has no overview)
    return client


# --- the staff page -------------------------------------------------------------------------------------


def test_the_staff_page_lists_open_ones_with_the_merchant_s_claim(staff, dash, merchant) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(tag="", amount="2")
    dash.post("/dashboard/claims/", {"asset": "ton", "txid": unrouted.deposit.txid})

    page = staff.get("/dashboard/unrouted/")

    assert page.status_code == 200
    body = text(page)
    assert unrouted.deposit.txid in body and ADDRESSES["ton"] in body
    assert "Acme Shop" in body  # the merchant's claim, beside it
    assert f'data-unrouted-id="{unrouted.pk}"' in body


def test_a_claim_on_a_transaction_nobody_recorded_is_shown_to_the_operator_apart(staff, dash) -> None:  # type: ignore[no-untyped-def]
    dash.post("/dashboard/claims/", {"asset": "ton", "txid": "9" * 64, "message": "paid at 10:02"})

    body = text(staff.get("/dashboard/unrouted/"))

    unmatched = body.split('data-testid="unmatched-claims"')[1]
    assert "9" * 64 in unmatched and "paid at 10:02" in unmatched and "Acme Shop" in unmatched


def test_the_staff_page_reads_as_many_rows_in_the_same_queries(staff, merchant) -> None:  # type: ignore[no-untyped-def]
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert staff.get("/dashboard/unrouted/").status_code == 200
        return len(captured)

    DepositClaimFactory(company=merchant.company, txid=UnroutedDepositFactory().deposit.txid)
    one = queries()
    for _ in range(3):
        DepositClaimFactory(company=merchant.company, txid=UnroutedDepositFactory(tag="").deposit.txid)

    assert queries() == one


@pytest.mark.parametrize("path", ["/dashboard/unrouted/", "/dashboard/unrouted/1/assign/"])
def test_only_staff_reach_it(dash, path) -> None:  # type: ignore[no-untyped-def]
    UnroutedDepositFactory()

    got = dash.get(path) if path.endswith("unrouted/") else dash.post(path, {})

    assert got.status_code == 404
    assert UnroutedDeposit.objects.get().status == Status.OPEN


def test_anonymous_visitors_are_sent_to_log_in(anon_dash) -> None:  # type: ignore[no-untyped-def]
    assert anon_dash.get("/dashboard/unrouted/").status_code == 302


def test_an_assignment_asks_for_confirmation_then_credits_the_invoice(staff, merchant) -> None:  # type: ignore[no-untyped-def]
    invoice = InvoiceFactory(company=merchant.company, code="ton")
    unrouted = UnroutedDepositFactory(tag="", amount=invoice.amount_due)
    form = {"target": "invoice", "target_id": str(invoice.pk)}
    path = f"/dashboard/unrouted/{unrouted.pk}/assign/"

    asked = staff.post(path, form)
    unrouted.refresh_from_db()
    assert asked.status_code == 200 and "Confirm: assign" in text(asked)
    assert unrouted.status == Status.OPEN  # nothing happened yet

    done = staff.post(path, {**form, "confirmed": "on"})

    invoice.refresh_from_db()
    assert done.status_code == 302
    assert invoice.status == Invoice.Status.DONE


def test_a_bad_invoice_id_is_a_form_error_and_changes_nothing(staff) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory()

    got = staff.post(
        f"/dashboard/unrouted/{unrouted.pk}/assign/",
        {"target": "invoice", "target_id": "not-an-invoice", "confirmed": "on"},
    )

    assert got.status_code == 200
    assert "No invoice not-an-invoice" in text(got)
    unrouted.refresh_from_db()
    assert unrouted.status == Status.OPEN


def test_a_refund_from_the_page_says_what_the_sender_gets_then_pays_it(staff) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(amount="2")
    path = f"/dashboard/unrouted/{unrouted.pk}/refund/"

    asked = text(staff.post(path, {"to": ""}))
    got = staff.post(path, {"to": "", "confirmed": "on"})

    assert '<strong data-testid="refund-net">1.95 ton</strong>' in asked
    assert got.status_code == 302
    assert Withdrawal.objects.get().to_address == ADDRESSES["ton"]


def test_keeping_one_for_the_house_asks_for_a_reason_and_a_confirmation(staff) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory(tag="", amount="100")  # the operator funding the house wallet
    path = f"/dashboard/unrouted/{unrouted.pk}/keep/"
    listed = text(staff.get("/dashboard/unrouted/"))

    asked = text(staff.post(path, {}))
    no_reason = staff.post(path, {"confirmed": "on"})
    unrouted.refresh_from_db()
    assert unrouted.status == Status.OPEN  # nothing yet: no reason given
    got = staff.post(path, {"why": "our own funding of the TON wallet", "confirmed": "on"})

    unrouted.refresh_from_db()
    assert "Keep for the house" in listed
    assert "The house keeps it: nobody is credited and nothing is sent back." in asked
    assert no_reason.status_code == 200 and "This field is required." in text(no_reason)
    assert got.status_code == 302 and unrouted.status == Status.KEPT
    assert list(unrouted.events.values_list("action", "detail")) == [
        ("record", "no_tag"),
        ("keep", "our own funding of the TON wallet"),
    ]
    assert not Withdrawal.objects.exists()


def test_an_unknown_unrouted_id_is_404(staff) -> None:  # type: ignore[no-untyped-def]
    assert staff.post("/dashboard/unrouted/999/refund/", {"confirmed": "on"}).status_code == 404


# --- the merchant's claims ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asset", "txid", "error"),
    [
        ("ton", "xyz", "transaction hash is"),
        ("ton", "a" * 65, "transaction hash is"),
        ("nope", "a" * 64, "Select a valid choice"),
        ("ton", "", "This field is required"),
    ],
)
def test_a_claim_with_a_bad_hash_is_a_form_error(dash, asset, txid, error) -> None:  # type: ignore[no-untyped-def]
    got = dash.post("/dashboard/claims/", {"asset": asset, "txid": txid})

    assert got.status_code == 200
    assert error in text(got)
    assert not DepositClaim.objects.exists()


def test_a_claim_is_stored_once_and_shows_its_status_to_its_merchant_only(
    dash, merchant, other_merchant
) -> None:  # type: ignore[no-untyped-def]
    txid = "AB" * 32
    other = Dash()
    other.client.force_login(other_merchant.company.owner)

    dash.post("/dashboard/claims/", {"asset": "ton", "txid": txid, "invoice": ""})
    dash.post("/dashboard/claims/", {"asset": "ton", "txid": txid})

    claim = DepositClaim.objects.get()
    assert (claim.company_id, claim.txid, claim.status) == (
        merchant.company.pk,
        txid.lower(),
        ClaimStatus.OPEN,
    )
    assert "waiting for the operator" in text(dash.get("/dashboard/claims/"))
    assert txid.lower() not in text(other.get("/dashboard/claims/"))


def test_a_claim_names_only_an_invoice_of_the_merchant_on_that_network(
    dash, merchant, other_merchant
) -> None:  # type: ignore[no-untyped-def]
    mine = InvoiceFactory(company=merchant.company, code="ton")
    theirs = InvoiceFactory(company=other_merchant.company, code="ton")
    btc = InvoiceFactory(company=merchant.company, code="btc")
    claim = {"asset": "ton", "txid": "1" * 64}

    refused = [text(dash.post("/dashboard/claims/", {**claim, "invoice": str(i.pk)})) for i in (theirs, btc)]
    dash.post("/dashboard/claims/", {**claim, "invoice": str(mine.pk)})

    assert "you have no invoice with this id" in refused[0]
    assert "this invoice is paid in btc, not ton" in refused[1]
    assert DepositClaim.objects.get().invoice_id == mine.pk


def test_claims_are_limited_per_day(dash) -> None:  # type: ignore[no-untyped-def]
    for n in range(CLAIMS_PER_DAY):
        dash.post("/dashboard/claims/", {"asset": "ton", "txid": f"{n:064x}"})

    got = dash.post("/dashboard/claims/", {"asset": "ton", "txid": "f" * 64})

    assert "at most" in text(got)
    assert DepositClaim.objects.count() == CLAIMS_PER_DAY


# --- the command ----------------------------------------------------------------------------------------


def _run(*args: str) -> str:
    out = StringIO()
    call_command("chain", "unrouted", *args, stdout=out)
    return out.getvalue()


def test_the_command_lists_assigns_and_refunds(merchant) -> None:  # type: ignore[no-untyped-def]
    invoice = InvoiceFactory(company=merchant.company, code="ton")
    first = UnroutedDepositFactory(tag="", amount=invoice.amount_due)
    second = UnroutedDepositFactory(amount="2")

    listed = [json.loads(line) for line in _run("list", "--json").splitlines()]
    assigned = _run("assign", str(first.pk), "--invoice", str(invoice.pk), "--why", "ticket 42")
    refunded = _run("refund", str(second.pk))

    assert [(row["id"], row["reason"]) for row in listed] == [
        (first.pk, "no_tag"),
        (second.pk, "unknown_tag"),
    ]
    assert "assigned to invoice" in assigned and "refunding to" in refunded
    assert [line.split()[:5] for line in _run().splitlines()] == [  # the refund is on its way
        [f"#{second.pk}", "2", "ton", "unknown_tag", "refunding"]
    ]
    assert len(_run("list", "--all").splitlines()) == 2


def test_the_command_keeps_one_for_the_house_only_with_a_reason() -> None:
    unrouted = UnroutedDepositFactory(tag="", amount="100")

    with pytest.raises(CommandError):
        _run("keep", str(unrouted.pk))  # --why is required
    kept = _run("keep", str(unrouted.pk), "--why", "house wallet funding")

    unrouted.refresh_from_db()
    assert kept.strip() == f"#{unrouted.pk} kept by the house: house wallet funding"
    assert unrouted.status == Status.KEPT
    assert _run() == ""  # no open one left


def test_the_sandbox_walk_through_a_forgotten_comment_refunded_to_its_sender() -> None:
    sent = StringIO()
    call_command(
        "sandbox", "deposit", "--asset", "ton", "--address", ton_deposit_address(), "--amount", "1.5",
        "--from", ADDRESSES["ton"], stdout=sent,
    )  # fmt: skip
    call_command("sandbox", "mine", "--asset", "ton", stdout=StringIO())
    [row] = [json.loads(line) for line in _run("list", "--json").splitlines()]

    _run("refund", str(row["id"]))

    assert (row["txid"], row["from"], row["reason"]) == (
        json.loads(sent.getvalue())["txid"],
        ADDRESSES["ton"],
        "no_tag",  # paid to the shared TON address without a comment, before any TON invoice
    )
    assert Withdrawal.objects.get().to_address == ADDRESSES["ton"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["assign", "999", "--invoice", "00000000-0000-0000-0000-000000000000"], "No unrouted deposit 999"),
        (["assign", "{id}", "--invoice", "nope"], "No invoice nope"),
        (["assign", "{id}", "--static-address", "nope"], "No static address nope"),
        (["refund", "abc"], "No unrouted deposit abc"),
        (["refund", "{id}", "--to", "nope"], "to:"),
    ],
)
def test_the_command_answers_bad_ids_with_a_clear_error(args, message) -> None:  # type: ignore[no-untyped-def]
    unrouted = UnroutedDepositFactory()

    with pytest.raises(CommandError, match=message):
        _run(*[arg.format(id=unrouted.pk) for arg in args])


# --- /metrics -------------------------------------------------------------------------------------------


def test_metrics_count_the_open_final_ones_per_code(client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.METRICS_TOKEN = METRICS_TOKEN
    UnroutedDepositFactory()
    UnroutedDepositFactory(tag="")
    UnroutedDepositFactory(confirm=False)  # not final: nothing to do yet

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")

    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }
    assert samples[("kassa_unrouted_deposits", (("code", "ton"),))] == 2


@pytest.mark.parametrize(
    ("code", "txid", "stored"),
    [
        ("btc", "AB" * 32, "ab" * 32),
        ("eth", "0x" + "CD" * 32, "0x" + "cd" * 32),
        ("trx", "ef" * 32, "ef" * 32),
        (
            "ton",
            "QmFzZTY0VHJhbnNhY3Rpb25IYXNoT2ZUb25fXy0tMTI=",
            "QmFzZTY0VHJhbnNhY3Rpb25IYXNoT2ZUb25fXy0tMTI=",
        ),
        ("sol", "5" * 88, "5" * 88),
        ("near", "A" * 44, "A" * 44),
    ],
)
def test_a_real_chain_s_hash_is_checked_in_its_own_shape(settings, code, txid, stored) -> None:  # type: ignore[no-untyped-def]
    settings.SANDBOX_ENABLED = False  # every code is then judged by its family's own shape

    assert txid_check(code, f" {txid} ") == stored
    with pytest.raises(ValidationFailed, match="transaction hash is"):
        txid_check(code, txid[:-3])
