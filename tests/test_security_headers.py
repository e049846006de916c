"""Content-Security-Policy: every page is sent with the strict policy, and the templates keep to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.factories import InvoiceFactory

ROOT = Path(__file__).resolve().parent.parent
STRICT = {
    "default-src": {"'self'"},
    "script-src": {"'self'"},
    "style-src": {"'self'"},
    "img-src": {"'self'", "data:"},
    "object-src": {"'none'"},
    "base-uri": {"'self'"},
    "form-action": {"'self'"},
    "frame-ancestors": {"'none'"},
}


def policy_of(response) -> dict[str, set[str]]:  # type: ignore[no-untyped-def]
    header = response.headers["Content-Security-Policy"]
    directives = (part.split() for part in header.split(";") if part.strip())
    return {name: set(values) for name, *values in directives}


def assert_strict(response) -> None:  # type: ignore[no-untyped-def]
    policy = policy_of(response)
    for directive, sources in STRICT.items():
        assert policy.get(directive) == sources, (directive, response.headers["Content-Security-Policy"])


@pytest.mark.django_db
def test_pay_page_and_dashboard_send_content_security_policy(client, merchant):
    invoice = InvoiceFactory(company=merchant.company)
    pending = InvoiceFactory(company=merchant.company, code="btc")
    pages = [f"/{invoice.pk}", f"/{pending.pk}", "/dashboard/login/", "/dashboard/signup/"]
    anonymous = [client.get(url) for url in pages]
    client.force_login(merchant.company.owner)
    logged_in = [client.get(url) for url in ("/dashboard/", f"/dashboard/invoices/{pending.pk}/")]

    for response in [*anonymous, *logged_in]:
        assert response.status_code == 200, response.request["PATH_INFO"]
        assert response["Content-Type"].startswith("text/html")
        assert_strict(response)


@pytest.mark.django_db
def test_not_found_page_sends_the_strict_policy(client):
    not_found = client.get("/no-such-page/here")

    assert not_found.status_code == 404
    assert_strict(not_found)


def test_api_docs_may_use_inline_styles_but_never_inline_script(client):
    swagger = client.get("/api/docs/")
    swagger_script = client.get("/api/docs/?script=")
    redoc = client.get("/api/redoc/")

    assert swagger.status_code == swagger_script.status_code == redoc.status_code == 200
    assert 'src="/api/docs/?script="' in swagger.content.decode()  # the start-up script is a file
    assert swagger_script["Content-Type"].startswith("application/javascript")
    for response in (swagger, redoc):
        policy = policy_of(response)
        assert policy["script-src"] == {"'self'"}
        assert "'unsafe-inline'" in policy["style-src"]
        assert policy["frame-ancestors"] == {"'none'"}


def test_templates_have_no_inline_script_style_or_event_handler():
    # The policy forbids them: a page that used one would silently lose it in the browser.
    inline = re.compile(
        r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=|javascript:", re.IGNORECASE
    )
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for folder in ("templates", "payments", "invoices", "webhooks", "withdrawals")
        for path in (ROOT / folder).rglob("*.html")
        for match in inline.finditer(path.read_text())
    ]

    assert offenders == []
