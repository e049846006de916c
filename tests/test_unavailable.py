"""The database unreachable: every request answers 503 with Retry-After (nothing was done), never a 500."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import Client

pytestmark = pytest.mark.django_db


def _refuse(self, *args, **kwargs):
    raise OperationalError("connection to server at 127.0.0.1, port 5432 failed: Connection refused")


@pytest.fixture
def database_down(monkeypatch):
    monkeypatch.setattr(BaseDatabaseWrapper, "cursor", _refuse)


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/api/invoices/v1/regular", None),
        (
            "post",
            "/api/invoices/v1/regular",
            {"invoiceCurrency": "usd", "items": [{"name": "A", "price": "1"}]},
        ),
        ("get", "/api/invoices/v1/regular/00000000-0000-4000-8000-000000000000", None),
    ],
)
def test_database_down_answers_503_problem_json_with_retry_after(merchant, database_down, method, path, body):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {merchant.public_token}")

    response = getattr(client, method)(
        path, json.dumps(body) if body else None, content_type="application/json"
    )

    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/problem+json")
    assert response["Retry-After"] == "5"
    assert json.loads(response.content)["code"] == "service_unavailable"


def test_database_down_answers_503_page_on_dashboard_and_pay_page(merchant, monkeypatch):
    from django.contrib.auth import get_user_model

    signed_in = Client(raise_request_exception=False)
    signed_in.force_login(get_user_model().objects.get(email="owner@acme.test"))
    client = Client(raise_request_exception=False)
    monkeypatch.setattr(BaseDatabaseWrapper, "cursor", _refuse)

    dashboard = signed_in.get("/dashboard/")
    login = client.get("/dashboard/")
    login = client.post("/dashboard/login/", {"username": "owner@acme.test", "password": "x"})
    pay_page = client.get("/00000000-0000-4000-8000-000000000000")

    for response in (dashboard, login, pay_page):
        assert response.status_code == 503, response.status_code
        assert response["Retry-After"] == "5"
        assert b"Temporarily unavailable" in response.content
