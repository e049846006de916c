"""Conformance of the API to its own OpenAPI document (schemathesis): every operation, generated requests,
no server error, and every response as the document declares it (status, content type, body schema).

Examples per operation: KASSA_SCHEMATHESIS_EXAMPLES (CI runs a few hundred, `make test` fewer).
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application

EXAMPLES = int(os.environ.get("KASSA_SCHEMATHESIS_EXAMPLES", "25"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)


@pytest.fixture
def token(merchant) -> str:
    """The merchant's token; the WSGI calls run inside the test's transaction, as Django's test client does:
    the end of a request must not close the test's database connection."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield merchant.public_token
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_api_conforms_to_its_openapi_document(case, token):
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)
