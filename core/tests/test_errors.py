"""Every API error status of docs/decisions.md leaves through the one handler as problem+json."""

import json
from decimal import Decimal

import pytest
from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from core.errors import (
    FieldError,
    Forbidden,
    IdempotencyConflict,
    InvalidState,
    NotFound,
    ValidationFailed,
)


class _Echo(APIView):
    """Returns the parsed body with the Python type of each value, to see what the parser produced."""

    permission_classes = [AllowAny]

    def post(self, request):
        return Response({key: [type(value).__name__, value] for key, value in request.data.items()})


def _raiser(exc):
    class _View(APIView):
        permission_classes = [AllowAny]

        def get(self, request):
            raise exc

    return _View.as_view()


class _NeverAllowed(BaseThrottle):
    def allow_request(self, request, view):
        return False

    def wait(self):
        return 12.2


class _Throttled(APIView):
    permission_classes = [AllowAny]
    throttle_classes = [_NeverAllowed]

    def get(self, request):
        return Response({})


class _Boom(APIView):
    permission_classes = [AllowAny]

    def get(self, request):
        raise RuntimeError("bug")


urlpatterns = [
    path("api/test/echo", _Echo.as_view()),
    path("api/test/forbidden", _raiser(Forbidden())),
    path("api/test/missing", _raiser(NotFound())),
    path("api/test/state", _raiser(InvalidState("Invoice is closed."))),
    path("api/test/idem", _raiser(IdempotencyConflict())),
    path(
        "api/test/rule",
        _raiser(ValidationFailed([FieldError("items[1].to", "invalid_address", "not a valid trx address")])),
    ),
    path("api/test/throttled", _Throttled.as_view()),
    path("api/test/boom", _Boom.as_view()),
]
handler404 = "config.views.page_not_found"
handler500 = "config.views.server_error"

pytestmark = [pytest.mark.django_db, pytest.mark.urls("core.tests.test_errors")]


def _problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == "about:blank"
    assert body["status"] == status
    assert body["code"] == code
    assert body["detail"]
    return body


def test_json_numbers_are_parsed_as_decimal(client):
    response = client.post(
        "/api/test/echo", '{"a": 0.1, "b": 10, "c": "0.3", "d": 1e-7}', content_type="application/json"
    )

    assert response.status_code == 200
    assert (
        response.content
        == b'{"a":["Decimal",0.1],"b":["int",10],"c":["str","0.3"],"d":["Decimal",0.0000001]}'
    )


@pytest.mark.parametrize(
    "body", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', "{not json", '{"a": 1,}']
)
def test_invalid_json_is_400(client, body):
    response = client.post("/api/test/echo", body, content_type="application/json")

    _problem(response, 400, "validation_error")


def test_non_json_body_is_415(client):
    response = client.post("/api/test/echo", "a=1", content_type="application/x-www-form-urlencoded")

    _problem(response, 415, "unsupported_media_type")


def test_json_with_charset_is_accepted(client):
    response = client.post("/api/test/echo", '{"a": 1}', content_type="application/json; charset=utf-8")

    assert response.status_code == 200


def test_body_over_one_mebibyte_is_413(client):
    body = json.dumps({"a": "x" * (1024 * 1024)})

    response = client.post("/api/test/echo", body, content_type="application/json")

    _problem(response, 413, "payload_too_large")


def test_body_at_the_limit_is_parsed(client):
    padding = 1024 * 1024 - len('{"a":""}')
    body = '{"a":"' + "x" * padding + '"}'

    response = client.post("/api/test/echo", body, content_type="application/json")

    assert len(body) == 1024 * 1024
    assert response.status_code == 200


def test_403_forbidden(client):
    _problem(client.get("/api/test/forbidden"), 403, "forbidden")


def test_404_not_found_from_a_view(client):
    _problem(client.get("/api/test/missing"), 404, "not_found")


def test_404_for_an_unknown_api_path(client):
    _problem(client.get("/api/nothing/here"), 404, "not_found")


def test_405_method_not_allowed(client):
    body = _problem(client.delete("/api/test/echo"), 405, "method_not_allowed")

    assert "DELETE" in body["detail"]


def test_409_invalid_state(client):
    body = _problem(client.get("/api/test/state"), 409, "invalid_state")

    assert body["detail"] == "Invoice is closed."


def test_409_idempotency_conflict(client):
    _problem(client.get("/api/test/idem"), 409, "idempotency_conflict")


def test_400_rule_code_and_field_errors(client):
    body = _problem(client.get("/api/test/rule"), 400, "invalid_address")

    assert body["errors"] == [
        {"field": "items[1].to", "code": "invalid_address", "message": "not a valid trx address"}
    ]
    assert body["detail"] == "items[1].to: not a valid trx address"


def test_429_rate_limited_with_retry_after_rounded_up(client):
    response = client.get("/api/test/throttled")

    _problem(response, 429, "rate_limited")
    assert response["Retry-After"] == "13"


def test_unhandled_exception_is_a_problem_500_not_an_html_page(client):
    client.raise_request_exception = False

    response = client.get("/api/test/boom")

    _problem(response, 500, "internal_error")


def test_decimal_in_response_is_a_raw_number(client):
    response = client.post(
        "/api/test/echo", '{"x": 12345678901234567890.123456789012345678}', content_type="application/json"
    )

    assert response.content == b'{"x":["Decimal",12345678901234567890.123456789012345678]}'
    assert (
        Decimal("12345678901234567890.123456789012345678")
        == json.loads(response.content, parse_float=Decimal)["x"][1]
    )
