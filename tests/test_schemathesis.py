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
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application

EXAMPLES = int(os.environ.get("KASSA_SCHEMATHESIS_EXAMPLES", "25"))
# positive_data_acceptance: a request the document calls valid is not refused (2xx; or 401/403/404/409/429
# and 5xx, which depend on the token, on which objects exist and on their states). A 400 is allowed only for
# these field errors, each a rule no request schema can state:
REFUSALS_THE_SCHEMA_CANNOT_STATE = {
    # state: the merchant's balance, and its withdrawal policy (daily limits) against past withdrawals
    "insufficient_balance",
    "limit_exceeded",
    # one field against another: an address's format and checksum for the chain of `asset`; whether that
    # asset takes a tag; its minimal withdrawal; the sum of the invoice's item prices
    "invalid_address",
    "tag_required",
    "tag_not_supported",
    "below_minimum",
    "total_not_positive",
    "total_too_large",
}
# The same kind, recognised by message: an amount's decimals against its asset's (btc 8, eth 18 ...; the
# document allows 18), a static deposit's `asset` against the asset its `network` carries, and `after`
# with an `offset` above 0 (OpenAPI 3.0 parameters cannot exclude one another).
# And a keyset position (`after`) that no next link gave: it is an opaque value from a response.
CROSS_FIELD_MESSAGES = (
    "amounts have at most",
    " carries ",
    "cannot be combined with offset",
    "is not a position from a page's next link",
)


def _schema_cannot_state(error: dict) -> bool:  # type: ignore[type-arg]
    message = error.get("message", "")
    return error["code"] in REFUSALS_THE_SCHEMA_CANNOT_STATE or any(
        part in message for part in CROSS_FIELD_MESSAGES
    )


def positive_data_accepted(ctx, response, case):  # type: ignore[no-untyped-def]
    if response.status_code == 400:
        errors = response.json().get("errors") or []
        if errors and all(_schema_cannot_state(error) for error in errors):
            return None
    return positive_data_acceptance(ctx, response, case)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    positive_data_accepted,
]

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
