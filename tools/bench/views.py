"""The bare baselines the HTTP rows are divided by: a Django + DRF endpoint that authenticates the Bearer
token exactly as the API does and inserts (POST) or reads (GET) one row, and nothing else: no serializer,
no service layer, no throttle, no outbox."""

from __future__ import annotations

from rest_framework.decorators import api_view, authentication_classes, permission_classes, throttle_classes
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from payments.api.authentication import BearerTokenAuthentication
from tools.bench.models import BaselineRow


@api_view(["POST"])
@authentication_classes([BearerTokenAuthentication])
@permission_classes([IsAuthenticated])
@throttle_classes([])
def baseline(request: Request) -> Response:
    """Insert one row for the authenticated merchant."""
    row = BaselineRow.objects.create(company_id=request.auth.company.pk)
    return Response({"id": row.pk})


@api_view(["GET"])
@authentication_classes([BearerTokenAuthentication])
@permission_classes([IsAuthenticated])
@throttle_classes([])
def baseline_read(request: Request, row_id: int) -> Response:
    """Read one row of the authenticated merchant's."""
    row = (
        BaselineRow.objects.filter(pk=row_id, company_id=request.auth.company.pk)
        .values("id", "created_at")
        .first()
    )
    if row is None:
        return Response({"detail": "Not found."}, status=404)
    return Response({"id": row["id"], "createdAt": row["created_at"].isoformat()})
