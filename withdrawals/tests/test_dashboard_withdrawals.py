"""Withdrawal pages: list and export, one withdrawal, a bulk CSV with preview, auto-withdrawal rules."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from payments.models import Account
from security.testing import mark_step_up_fresh
from tests.chain import fund
from tests.dashboard import (  # noqa: F401 - fixtures
    dash,
    dashboard_rates,
    text,
)
from tests.factories import BTC_ADDRESS, WithdrawalFactory
from withdrawals.models import AutoWithdrawalRule, Withdrawal

pytestmark = pytest.mark.django_db

NEW = "/dashboard/withdrawals/new/"
BULK = "/dashboard/withdrawals/bulk/"
RULES = "/dashboard/withdrawals/rules/"
TRON_ADDRESS = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
TON_ADDRESS = "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHF"


@pytest.fixture(autouse=True)
def _stepped_up(dash):  # type: ignore[no-untyped-def]
    """Sending and rule changes need a fresh step-up (withdrawals/tests/test_dashboard_payouts.py has it)."""
    mark_step_up_fresh(dash.client)


def _confirmed(dash, response):  # type: ignore[no-untyped-def]
    """The form led to its confirmation page: send from there (the session is fresh)."""
    assert response.status_code == 303 and "/dashboard/withdrawals/confirm/" in response["Location"]
    return dash.post(response["Location"])


def _available(company, code: str) -> Decimal:  # type: ignore[no-untyped-def]
    account = Account.objects.filter(company=company, code=code).first()
    return account.available if account else Decimal(0)


# --- list, detail, export -------------------------------------------------------------------------------


def test_the_list_shows_withdrawals_and_filters_them(dash, merchant):
    withdrawal = WithdrawalFactory(company=merchant.company, status="done")
    other = WithdrawalFactory(company=merchant.company, amount="0.002")

    everything = text(dash.get("/dashboard/withdrawals/"))
    done = text(dash.get("/dashboard/withdrawals/", {"status": "done"}))
    eth = text(dash.get("/dashboard/withdrawals/", {"asset": "eth"}))
    automatic = text(dash.get("/dashboard/withdrawals/", {"kind": "automatic"}))

    assert withdrawal.uid in everything and other.uid in everything
    assert withdrawal.uid in done and other.uid not in done
    assert "No withdrawal matches these filters." in eth
    assert "No withdrawal matches these filters." in automatic


@pytest.mark.parametrize("params", [{"status": "lost"}, {"asset": "doge"}, {"kind": "x"}, {"page": "zz"}])
def test_bad_list_filters_never_fail(dash, merchant, params):
    WithdrawalFactory(company=merchant.company)

    assert dash.get("/dashboard/withdrawals/", params).status_code == 200


def test_the_detail_shows_amount_fee_address_and_webhooks(dash, merchant):
    withdrawal = WithdrawalFactory(company=merchant.company)

    html = text(dash.get(f"/dashboard/withdrawals/{withdrawal.uid}/"))

    assert withdrawal.uid in html and BTC_ADDRESS in html
    assert "0.001 btc" in html and "0.0001 btc" in html and "0.0011 btc" in html
    assert "not broadcast yet" in html
    assert "timeline__item--processing" in html


def test_an_unknown_withdrawal_is_404(dash):
    assert dash.get("/dashboard/withdrawals/999-1/").status_code == 404


def test_the_export_is_a_csv_of_the_filtered_list(dash, merchant):
    WithdrawalFactory(company=merchant.company, status="done")
    second = WithdrawalFactory(company=merchant.company, amount="0.002")

    response = dash.get("/dashboard/withdrawals/export.csv", {"status": "processing"})

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert "attachment;" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:6] == ["uid", "created_at", "status", "asset", "amount", "fee"]
    assert [row[0] for row in rows[1:]] == [second.uid]
    assert rows[1][4:7] == ["0.002", "0.0001", BTC_ADDRESS]


def test_the_export_defuses_spreadsheet_formulas(dash, merchant):
    withdrawal = WithdrawalFactory(company=merchant.company)
    Withdrawal.objects.filter(pk=withdrawal.pk).update(to_address="=HYPERLINK(evil)", tag="+1")

    response = dash.get("/dashboard/withdrawals/export.csv")

    row = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))[1]
    assert row[6] == "'=HYPERLINK(evil)" and row[7] == "'+1"


# --- one withdrawal -------------------------------------------------------------------------------------


def test_a_withdrawal_is_accepted_and_its_amount_plus_fee_held(dash, merchant):
    fund(merchant.company, "btc", "0.01")

    response = _confirmed(
        dash, dash.post(NEW, {"asset": "btc", "to": BTC_ADDRESS, "amount": "0.005", "tag": ""})
    )

    withdrawal = Withdrawal.objects.get(company=merchant.company)
    assert response.status_code == 303 and withdrawal.uid in text(dash.get(response["Location"]))
    assert withdrawal.amount == Decimal("0.005") and withdrawal.to_address == BTC_ADDRESS
    assert _available(merchant.company, "btc") == Decimal("0.0049")


def test_a_ton_withdrawal_carries_its_tag(dash, merchant):
    fund(merchant.company, "ton", "10")

    _confirmed(dash, dash.post(NEW, {"asset": "ton", "to": TON_ADDRESS, "amount": "1.5", "tag": "100200"}))

    assert Withdrawal.objects.get().tag == "100200"


@pytest.mark.parametrize(
    ("body", "field_message"),
    [
        ({"to": "bc1qnotanaddress"}, "not a valid btc address"),
        ({"to": TRON_ADDRESS}, "not a valid btc address"),
        ({"amount": "0.0001"}, "the minimal btc withdrawal is 0.0005"),
        ({"amount": "0.000000001"}, "btc amounts have at most 8 decimals"),
        ({"amount": "1"}, "btc available 0.01, requested 1.0001"),
        ({"amount": "abc"}, "Must be a plain decimal number in the ASCII digits 0-9, e.g. 10.5."),
        ({"amount": "0"}, "Must be greater than 0."),
        ({"amount": "-1"}, "Must be greater than 0."),
        ({"tag": "123"}, "btc addresses take no tag"),
        ({"asset": "doge"}, "Select a valid choice."),
        ({"to": ""}, "This field is required."),
    ],
)
def test_a_bad_withdrawal_is_refused_and_nothing_is_held(dash, merchant, body, field_message):
    fund(merchant.company, "btc", "0.01")
    data = {"asset": "btc", "to": BTC_ADDRESS, "amount": "0.005", "tag": "", **body}

    response = dash.post(NEW, data)

    assert response.status_code == 200
    assert field_message in text(response)
    assert not Withdrawal.objects.exists()
    assert _available(merchant.company, "btc") == Decimal("0.01")


def test_a_ton_withdrawal_without_tag_is_refused(dash, merchant):
    fund(merchant.company, "ton", "10")

    response = dash.post(NEW, {"asset": "ton", "to": TON_ADDRESS, "amount": "1.5", "tag": ""})

    assert "ton withdrawals need the receiver&#x27;s tag" in text(response)
    assert not Withdrawal.objects.exists()


# --- bulk -----------------------------------------------------------------------------------------------

GOOD_LINES = f"btc,{BTC_ADDRESS},0.001,\ntrc20usdt,{TRON_ADDRESS},25,\n"
BAD_LINE = f"trc20usdt,{BTC_ADDRESS},25,\n"


def _preview(dash, csv_text: str):  # type: ignore[no-untyped-def]
    return dash.post(BULK, {"action": "preview", "text": csv_text})


def _send(dash, csv_text: str, **extra: str):  # type: ignore[no-untyped-def]
    return dash.post(BULK, {"action": "send", "csv": csv_text, **extra})


@pytest.fixture
def funded(merchant):  # type: ignore[no-untyped-def]
    fund(merchant.company, "btc", "0.01")
    fund(merchant.company, "trc20usdt", "100")
    return merchant


def test_the_preview_checks_every_line_and_holds_nothing(dash, funded):
    response = _preview(dash, "asset,to,amount,tag\n" + GOOD_LINES + BAD_LINE)

    html = text(response)
    assert "2 valid" in html and "1 rejected" in html
    assert 'class="preview-bad" data-line="4"' in html
    assert "to: not a valid trc20usdt address" in html
    assert "Send only the 2 valid lines" in html
    assert not Withdrawal.objects.exists()
    assert _available(funded.company, "btc") == Decimal("0.01")


def test_an_all_valid_file_is_sent_as_one_bulk(dash, funded):
    assert "Send 2 withdrawals" in text(_preview(dash, GOOD_LINES))

    response = _confirmed(dash, _send(dash, GOOD_LINES))

    assert response.status_code == 303
    withdrawals = list(Withdrawal.objects.order_by("pk"))
    assert [(w.code, w.amount) for w in withdrawals] == [
        ("btc", Decimal("0.001")),
        ("trc20usdt", Decimal("25")),
    ]
    assert withdrawals[0].request_id is not None and withdrawals[0].request_id == withdrawals[1].request_id


def test_a_file_with_a_bad_line_is_not_sent_unless_the_merchant_leaves_it_out(dash, funded):
    refused = _send(dash, GOOD_LINES + BAD_LINE)

    assert refused.status_code == 200 and not Withdrawal.objects.exists()

    sent = _confirmed(dash, _send(dash, GOOD_LINES + BAD_LINE, skip_invalid="1"))

    assert sent.status_code == 303
    assert Withdrawal.objects.count() == 2
    assert "1 invalid line left out" in text(dash.get("/dashboard/withdrawals/"))


def test_a_short_balance_at_send_time_sends_nothing_and_names_the_lines(dash, merchant):
    fund(merchant.company, "btc", "0.0015")
    lines = f"btc,{BTC_ADDRESS},0.001,\nbtc,{BTC_ADDRESS},0.001,\n"

    response = _send(dash, lines)

    html = text(response)
    assert response.status_code == 200
    assert "btc available 0.0015, requested 0.0022" in html
    assert not Withdrawal.objects.exists()


def test_a_header_may_order_the_columns_and_name_them_differently(dash, funded):
    lines = f"amount,Address,asset\n0.001,{BTC_ADDRESS},btc\n"

    _confirmed(dash, _send(dash, lines))

    assert Withdrawal.objects.get().amount == Decimal("0.001")


def test_an_uploaded_file_is_read(dash, funded):
    upload = SimpleUploadedFile("payouts.csv", ("\ufeff" + GOOD_LINES).encode(), content_type="text/csv")

    response = dash.post(BULK, {"action": "preview", "file": upload})

    assert "2 valid" in text(response)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"text": ""}, "Choose a CSV file or paste its lines."),
        ({"text": "\n\n"}, "Choose a CSV file or paste its lines."),
        ({"text": "asset,amount,colour\nbtc,1,red\n"}, "The header must name the columns"),
        ({"text": "asset,to,amount,tag\n"}, "The file has no withdrawal lines."),
        (
            {"text": f"btc,{BTC_ADDRESS},0.001,,extra\n"},
            "Expected the columns asset, to, amount, tag; found 5",
        ),
        ({"text": "btc\n"}, "amount: Must be a plain decimal number in the ASCII digits 0-9, e.g. 10.5."),
        ({"text": f"doge,{BTC_ADDRESS},1,\n"}, "&#x27;doge&#x27; is not a supported asset."),
    ],
)
def test_bad_files_are_explained_and_nothing_is_sent(dash, funded, body, message):
    response = dash.post(BULK, {"action": "preview", **body})

    assert response.status_code == 200
    assert message in text(response)
    assert not Withdrawal.objects.exists()


def test_a_file_that_is_not_utf8_is_refused(dash, funded):
    upload = SimpleUploadedFile("payouts.csv", "btc,adresse,1,\u00e9\n".encode("latin-1"))

    response = dash.post(BULK, {"action": "preview", "file": upload})

    assert "not UTF-8 text" in text(response)


def test_more_lines_than_one_call_allows_are_refused(dash, funded, settings):
    settings.WITHDRAWAL_MAX_ITEMS = 2

    response = _send(dash, GOOD_LINES + GOOD_LINES)

    assert "At most 2 withdrawals per file; this one has 4." in text(response)
    assert not Withdrawal.objects.exists()


# --- auto-withdrawal rules ------------------------------------------------------------------------------


def test_a_rule_is_saved_and_the_api_sees_it(dash, merchant, api):
    response = dash.post(
        RULES, {"enabled_btc": "on", "amount_btc": "0.01", "address_btc": BTC_ADDRESS, "tag_btc": ""}
    )

    assert response.status_code == 302
    rule = AutoWithdrawalRule.objects.get(company=merchant.company)
    assert (rule.code, rule.is_enabled, rule.amount, rule.address) == (
        "btc",
        True,
        Decimal("0.01"),
        BTC_ADDRESS,
    )
    body = api.get("/api/company/auto-withdrawals").json()["autoWithdrawals"]
    assert body[0] == {
        "assetId": "btc",
        "amount": 0.01,
        "isEnabled": True,
        "withdrawalTag": None,
        "withdrawalAddress": BTC_ADDRESS,
    }
    html = text(dash.get(RULES))
    assert f'value="{BTC_ADDRESS}"' in html and 'name="enabled_btc" id="id_enabled_btc" checked' in html


def test_posting_the_form_unchanged_writes_nothing(dash, merchant):
    response = dash.post(RULES, {}, follow=True)

    assert "Nothing changed." in text(response)
    assert not AutoWithdrawalRule.objects.exists()


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"enabled_ton": "on", "amount_ton": "5", "address_ton": TON_ADDRESS},
            "ton withdrawals need the receiver",
        ),
        ({"enabled_ton": "on", "amount_ton": "5", "address_ton": ""}, "not a valid ton address"),
        (
            {"enabled_ton": "on", "amount_ton": "0.1", "address_ton": TON_ADDRESS, "tag_ton": "1"},
            "minimal ton",
        ),
        ({"amount_ton": "abc"}, "Must be a plain decimal number in the ASCII digits 0-9, e.g. 10.5."),
        ({"amount_ton": "-1"}, "Ensure this value is greater than or equal to 0."),
        ({"amount_ton": "1.0000000001"}, "ton amounts have at most 9 decimals"),
        ({"address_ton": BTC_ADDRESS}, "not a valid ton address"),
    ],
)
def test_bad_rules_save_nothing_not_even_the_good_ones(dash, merchant, row, message):
    body = {"enabled_btc": "on", "amount_btc": "0.01", "address_btc": BTC_ADDRESS, **row}

    response = dash.post(RULES, body)

    assert response.status_code == 200
    assert message in text(response).replace("&#x27;", "'")
    assert not AutoWithdrawalRule.objects.exists()
