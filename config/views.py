"""Plain Django views of the core: health check and the error pages outside the API."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import InterfaceError, OperationalError, connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template import loader

from core.errors import problem_json_response


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers and the broker accepts a connection, else 503 naming the part."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503
    )


def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: the database, the broker and every real chain node answer (the sandbox is ready with the
    database); 200, or 503 with `failed` naming each part that does not. /healthz stays the liveness probe."""
    from chains.readiness import nodes_ready

    # The nodes are asked while the database and the broker are: the probe answers within ~2-3 s.
    with ThreadPoolExecutor(max_workers=1) as pool:
        nodes = pool.submit(nodes_ready)
        checks: dict[str, Any] = {"database": _check_database(), "broker": _check_broker()}
        try:
            checks["nodes"] = nodes.result()
        except Exception as exc:  # a configuration that cannot be read: not ready, never a 500
            checks["nodes"] = {"*": f"error: {exc.__class__.__name__}"}
    failed = [name for name in ("database", "broker") if checks[name] != "ok"]
    failed += [f"nodes.{code}" for code, answer in checks["nodes"].items() if answer != "ok"]
    body = {"status": "unavailable" if failed else "ok", **checks}
    if failed:
        body["failed"] = failed
    return JsonResponse(body, status=503 if failed else 200)


def _check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:  # health must report, not raise
        return f"error: {exc.__class__.__name__}"


def _check_broker() -> str:
    from config.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return "ok"
    except Exception as exc:  # health must report, not raise
        return f"error: {exc.__class__.__name__}"


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return problem_json_response(404, "not_found", f"No endpoint at {request.path}.")
    return render(request, "404.html", status=404)


# Seconds a client is asked to wait when the database cannot be reached.
UNAVAILABLE_RETRY_AFTER_SECONDS = 5


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: runs inside Django's `except`, so the exception is at hand. An unreachable database is not
    a bug of ours and nothing was done: 503 with Retry-After, so clients retry instead of giving up."""
    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        return service_unavailable(request)
    if request.path.startswith("/api/"):
        return problem_json_response(
            500, "internal_error", "Something went wrong on our side; it was logged."
        )
    return render(request, "500.html", status=500)


def service_unavailable(request: HttpRequest) -> HttpResponse:
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = problem_json_response(
            503, "service_unavailable", "The service cannot reach its database right now; nothing was done."
        )
    else:
        # No request context: its processors (user, dashboard) would query the database that is down.
        response = HttpResponse(loader.render_to_string("503.html"), status=503)
    response["Retry-After"] = str(UNAVAILABLE_RETRY_AFTER_SECONDS)
    return response


def sandbox_transaction(request: HttpRequest, txid: str) -> HttpResponse:
    """The explorer page that sandbox `txHash` links point to; absent while the sandbox is off."""
    from core.offer import sandbox_enabled

    if not sandbox_enabled():
        raise Http404("The sandbox is not enabled on this deployment.")
    from chains.sandbox import confirmations, tip_height
    from core.assets import get_asset
    from core.money import number_text
    from payments.models import SandboxTransaction

    tx = get_object_or_404(SandboxTransaction, txid=txid)
    asset = get_asset(tx.code)
    tip = tip_height(tx.code)
    confirmed = confirmations(tx, tip)
    if tx.block_height is None:
        state = "pending"
    elif tx.outcome != SandboxTransaction.Outcome.CONFIRM:
        state = "failed" if tx.outcome == SandboxTransaction.Outcome.FAIL else "frozen"
    else:
        state = "confirmed" if confirmed >= asset.confirmations else "confirming"
    context = {
        "tx": tx,
        "asset": asset,
        "amount": number_text(tx.amount),
        "tip": tip,
        "confirmations": confirmed,
        "state": state,
    }
    return render(request, "chains/sandbox_tx.html", context)
