"""The audit log names the member of each action, filters by member, action and UTC days (keyset pages keep
the filters), and exports the same rows as a streamed CSV."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from security.audit import audit_record
from security.models import AuditEvent
from tests.dashboard import Dash
from tests.factories import CompanyFactory, MemberFactory

pytestmark = pytest.mark.django_db

LOG = "/dashboard/security/audit/"
EXPORT = "/dashboard/security/audit/export/"


def _event(company: Any, user: Any, action: str, detail: str = "", at: str | None = None) -> AuditEvent:
    event = audit_record(None, company=company, action=action, detail=detail, user=user)
    if at is not None:  # auto_now_add: the time is set after the row is made
        when = datetime.fromisoformat(at).replace(tzinfo=UTC)
        AuditEvent.objects.filter(pk=event.pk).update(created_at=when)
    return event


def _table(response: Any) -> str:
    return str(response.content.decode()).split('data-testid="audit-log"')[1]


def _csv(response: Any) -> list[dict[str, str]]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


@pytest.fixture
def log(merchant):  # type: ignore[no-untyped-def]
    """The owner's company with a finance member; four actions over three days, and another company's."""
    company = merchant.company
    owner = company.owner
    finance = MemberFactory(company=company, role="finance", email="fin@acme.test").user
    _event(company, owner, "token.rotate", "new token kassa_pk_ab…", at="2026-03-01T09:00:00")
    _event(company, finance, "withdrawal.create", "001-1: 0.002 btc", at="2026-03-02T23:59:59")
    _event(company, finance, "withdrawal.approve", "001-2, requested by the API", at="2026-03-03T00:00:00")
    _event(
        company, owner, "withdrawal.approve", "001-3, requested by fin@acme.test", at="2026-03-03T12:00:00"
    )
    _event(CompanyFactory(), None, "withdrawal.approve", "someone else's")
    return {"company": company, "owner": owner, "finance": finance}


@pytest.fixture
def owner_dash(log):  # type: ignore[no-untyped-def]
    dash = Dash()
    dash.client.force_login(log["owner"])
    return dash


def test_each_row_names_its_member(owner_dash, log):
    table = _table(owner_dash.get(LOG))

    members = re.findall(r'data-testid="audit-member">([^<]*)<', table)
    assert members == ["owner@acme.test", "fin@acme.test", "fin@acme.test", "owner@acme.test"]


def test_the_member_filter_keeps_that_members_actions(owner_dash, log):
    table = _table(owner_dash.get(LOG, {"member": log["finance"].pk}))

    assert "001-1: 0.002 btc" in table and "001-2, requested by the API" in table
    assert "new token" not in table and "001-3" not in table


def test_the_action_and_date_filters_combine(owner_dash, log):
    table = _table(owner_dash.get(LOG, {"action": "withdrawal.approve", "since": "2026-03-03"}))
    days = _table(owner_dash.get(LOG, {"since": "2026-03-02", "until": "2026-03-02"}))

    assert "001-2" in table and "001-3" in table and "001-1" not in table
    assert "someone else" not in table
    assert "001-1" in days and "001-2" not in days and "new token" not in days  # UTC days, both ends in


def test_a_filter_that_is_not_one_shows_its_error_and_filters_nothing_else(owner_dash, log):
    response = owner_dash.get(LOG, {"since": "yesterday", "member": "999999", "action": "withdrawal.approve"})

    table = _table(response)
    assert response.status_code == 200
    assert "Enter a valid date." in response.content.decode()
    assert "001-2" in table and "001-3" in table and "001-1" not in table


def test_a_member_of_another_company_is_no_choice(owner_dash, log):
    stranger = MemberFactory(company=CompanyFactory(), role="owner", email="other@else.test").user

    page = owner_dash.get(LOG, {"member": stranger.pk}).content.decode()

    assert "other@else.test" not in page and "fin@acme.test" in page  # the choice list: this company's


def test_the_pages_keep_the_filters(owner_dash, log):
    for number in range(30):
        _event(log["company"], log["finance"], "withdrawal.create", f"bulk {number:02d}")

    first = owner_dash.get(LOG, {"member": log["finance"].pk, "action": "withdrawal.create"})
    older = re.search(r'href="\?([^"]*after=[^"]+)"', first.content.decode()).group(1)  # type: ignore[union-attr]
    second = _table(owner_dash.get(LOG + "?" + older.replace("&amp;", "&")))

    assert "member=" in older and "action=withdrawal.create" in older
    assert "bulk 04" in second and "001-1: 0.002 btc" in second
    assert "new token" not in second and "001-2" not in second


def test_the_export_is_the_filtered_log_as_csv_naming_the_member(owner_dash, log):
    response = owner_dash.get(EXPORT, {"member": log["finance"].pk})

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="audit-')
    rows = _csv(response)
    assert [(row["time"], row["member"], row["action"], row["action_label"]) for row in rows] == [
        ("2026-03-03T00:00:00Z", "fin@acme.test", "withdrawal.approve", "Withdrawal approved"),
        ("2026-03-02T23:59:59Z", "fin@acme.test", "withdrawal.create", "Withdrawal requested"),
    ]
    assert rows[0]["detail"] == "001-2, requested by the API"


def test_the_export_without_filters_has_the_whole_company_log_only(owner_dash, log):
    rows = _csv(owner_dash.get(EXPORT))

    assert len(rows) == 4 and all(row["detail"] != "someone else's" for row in rows)
    assert rows[-1]["member"] == "owner@acme.test" and rows[-1]["ip"] == ""


def test_the_export_defuses_spreadsheet_formulas(owner_dash, log):
    _event(log["company"], log["owner"], "webhook_url.set", '=HYPERLINK("http://evil")')

    rows = _csv(owner_dash.get(EXPORT, {"action": "webhook_url.set"}))

    assert rows[0]["detail"] == '\'=HYPERLINK("http://evil")'


def test_the_log_page_links_to_the_export_with_its_filters(owner_dash, log):
    page = owner_dash.get(LOG, {"action": "token.rotate"}).content.decode()

    assert f'href="{EXPORT}?action=token.rotate"' in page


@pytest.mark.parametrize("role", ["finance", "developer", "viewer"])
def test_the_log_and_its_export_are_for_the_roles_with_audit(log, role):
    member = MemberFactory(company=log["company"], role=role).user
    dash = Dash()
    dash.client.force_login(member)

    assert dash.get(LOG).status_code == 403
    assert dash.get(EXPORT).status_code == 403
