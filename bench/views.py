"""The bare baseline: the least an authenticated write can cost on this stack, for the ratio column."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods
from rest_framework.exceptions import AuthenticationFailed

from bench.models import BaselineRow
from payments.auth import BearerTokenAuthentication


@csrf_exempt  # Bearer-token API call, no session: the same reason DRF's APIView skips CSRF
@require_http_methods(["POST"])
def baseline(request: HttpRequest) -> JsonResponse:
    """Authenticate like the API does, insert one row, answer small JSON; no DRF view machinery."""
    try:
        # The authenticator reads only META, which a plain HttpRequest has as well.
        result = BearerTokenAuthentication().authenticate(request)  # type: ignore[arg-type]
    except AuthenticationFailed as exc:
        return JsonResponse({"detail": str(exc.detail)}, status=401)
    if result is None:
        return JsonResponse({"detail": "Send 'Authorization: Bearer <token>'."}, status=401)
    row = BaselineRow.objects.create(company_id=result[1].company.pk)
    return JsonResponse({"id": row.pk})
