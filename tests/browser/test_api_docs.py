"""The API docs (Swagger UI from drf-spectacular's sidecar files) render in Chromium under their CSP."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs in the test's thread

pytestmark = pytest.mark.django_db(transaction=True)


def test_swagger_ui_renders_the_schema_without_csp_violations(open_page, live_server, shot):
    page = open_page("desktop")

    response = page.goto(f"{live_server.url}/api/docs/")

    assert response is not None and response.status == 200
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy + ";"  # the start-up script is a same-origin file, not inline
    page.locator(".swagger-ui .info .title").filter(has_text="Kassa API").wait_for()
    page.locator(".opblock").first.wait_for()  # the schema was fetched and its operations listed
    shot(page, "api-docs", "desktop", "swagger")
    # open_page fails the test on any console error, CSP violations included
