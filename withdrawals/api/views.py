from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.pagination import PAGE_PARAMETERS, KassaPagination, page_serializer
from core.api.validation import validated
from core.errors import FieldError, ValidationFailed, flatten_drf_errors
from payments.auth import SANDBOX_API_PERMISSIONS, current_company
from payments.schema import links, problem
from withdrawals import auto_withdrawals, selectors, services
from withdrawals.api.serializers import (
    AutoWithdrawalListOutputSerializer,
    AutoWithdrawalRuleInputSerializer,
    AutoWithdrawalsPatchSchema,
    WithdrawalListFilterSerializer,
    WithdrawalOutputSerializer,
    WithdrawalResultSerializer,
    WithdrawInputSerializer,
    auto_withdrawal_entry,
)
from withdrawals.approvals import withdrawals_made_by
from withdrawals.auto_withdrawals import RuleInput
from withdrawals.idempotency import (
    HEADER,
    KEY_PATTERN,
    MAX_KEY_LENGTH,
    StoredResponse,
    idempotency_claim,
    idempotency_key_check,
    request_fingerprint,
)
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem


class WithdrawApi(APIView):
    required_scopes = {"POST": "withdrawals:write"}

    @extend_schema(
        request=WithdrawInputSerializer,
        responses={
            200: WithdrawalResultSerializer(many=True),
            400: problem(
                "Nothing was accepted: an item breaks a rule (`validation_error`, `invalid_address`, "
                "`below_minimum`...), a code's balance is short (`insufficient_balance`), or an item is over "
                "a limit of the payout policy (`limit_exceeded`); `errors` names each failing item."
            ),
            409: problem(
                "This Idempotency-Key was used with a different request (`idempotency_conflict`), or its "
                "first request is still being processed (`idempotency_in_progress`)."
            ),
        },
        parameters=[
            OpenApiParameter(
                HEADER,
                {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": KEY_PATTERN},
                OpenApiParameter.HEADER,
                description="Optional, up to 255 characters, kept 24 h: a repeat replays the first response.",
            )
        ],
        summary="Withdraw: one item or a bulk of up to 1000, all accepted or none",
        extensions=links(
            200,
            "uid",
            "$response.body#/0/uid",
            "transactions_withdrawals_retrieve",
            "sandbox_withdrawals_reject_create",
        ),
    )
    def post(self, request: Request) -> Response:
        company = current_company(request)
        key = idempotency_key_check(request.headers.get(HEADER))
        data = validated(WithdrawInputSerializer, request.data)
        items = [
            WithdrawalItem(asset=i["asset"], to=i["to"], amount=i["amount"], tag=i.get("tag") or "")
            for i in data["items"]
        ]
        maker = _token_creator(request)
        if key is None:
            withdrawals = services.withdrawal_request(
                company=company, items=items, on_accepted=_made_by(company, maker)
            )
            return Response(services.withdrawal_results(withdrawals))

        fingerprint = request_fingerprint(request.method or "POST", request.path, request.data)
        claim = idempotency_claim(company=company, key=key, fingerprint=fingerprint)
        if isinstance(claim, StoredResponse):
            return Response(claim.body, status=claim.status, headers={"Idempotent-Replayed": "true"})
        with claim.released_on_error():
            withdrawals = services.withdrawal_request(
                company=company,
                items=items,
                on_accepted=lambda accepted: _stored(claim, accepted, _made_by(company, maker)),
            )
        return Response(services.withdrawal_results(withdrawals))


def _token_creator(request: Request) -> Any:
    """The member whose named token makes this call (the withdrawals' maker, whom the payout policy's
    second approver must differ from); None for the company's token or a token without a creator."""
    return getattr(request.auth, "created_by_id", None)  # read with the token at authentication


def _made_by(company: Any, maker: Any) -> Callable[[list[Withdrawal]], None] | None:
    """What records the maker in the transaction that accepts the withdrawals (None: nobody to record,
    and the single-withdrawal path keeps its one statement)."""
    if maker is None:
        return None
    return lambda accepted: withdrawals_made_by(
        company=company, uids=[w.uid for w in accepted], user_id=maker
    )


def _stored(claim: Any, accepted: list[Withdrawal], made: Callable[[list[Withdrawal]], None] | None) -> None:
    if made is not None:
        made(accepted)
    claim.store(200, services.withdrawal_results(accepted))


class WithdrawalListApi(APIView):
    required_scopes = {"GET": "withdrawals:read"}

    @extend_schema(
        operation_id="transactions_withdrawals_list",
        parameters=[WithdrawalListFilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_serializer("WithdrawalPage", WithdrawalOutputSerializer)},
    )
    def get(self, request: Request) -> Response:
        filters = validated(WithdrawalListFilterSerializer, request.query_params)
        values = filters
        automatic = values.get("isAutomatic")
        withdrawals = selectors.withdrawal_list_for_company(
            company=current_company(request),
            status=values.get("status"),
            code=values.get("asset"),
            is_automatic=None if automatic is None else automatic == "true",
        )
        paginator = KassaPagination()
        page = paginator.paginate_queryset(withdrawals, request, view=self) or []
        return paginator.get_paginated_response(WithdrawalOutputSerializer(page, many=True).data)


class WithdrawalDetailApi(APIView):
    required_scopes = {"GET": "withdrawals:read"}

    @extend_schema(responses={200: WithdrawalOutputSerializer})
    def get(self, request: Request, uid: str) -> Response:
        withdrawal = selectors.withdrawal_get_for_company(company=current_company(request), uid=uid)
        return Response(WithdrawalOutputSerializer(withdrawal).data)


class SandboxWithdrawalRejectApi(APIView):
    required_scopes = {"POST": "sandbox"}
    permission_classes = SANDBOX_API_PERMISSIONS

    @extend_schema(
        request=None,
        responses={
            200: WithdrawalOutputSerializer,
            400: problem("The withdrawal is not on the sandbox chain (`unsupported_asset`)."),
            409: problem("Only a processing withdrawal can be rejected (`invalid_state`)."),
        },
    )
    def post(self, request: Request, uid: str) -> Response:
        withdrawal: Withdrawal = services.withdrawal_sandbox_reject(company=current_company(request), uid=uid)
        return Response(WithdrawalOutputSerializer(withdrawal).data)


def _auto_withdrawals_body(request: Request) -> dict[str, Any]:
    rules = selectors.auto_withdrawal_list_for_company(company=current_company(request))
    return {"autoWithdrawals": [auto_withdrawal_entry(asset, rule) for asset, rule in rules]}


class AutoWithdrawalsApi(APIView):
    required_scopes = {"GET": "withdrawals:read", "PATCH": "withdrawals:write"}

    @extend_schema(responses={200: AutoWithdrawalListOutputSerializer})
    def get(self, request: Request) -> Response:
        return Response(_auto_withdrawals_body(request))

    @extend_schema(request=AutoWithdrawalsPatchSchema, responses={200: AutoWithdrawalListOutputSerializer})
    def patch(self, request: Request) -> Response:
        assets = request.data.get("assets") if isinstance(request.data, dict) else None
        if not isinstance(assets, dict):
            raise ValidationFailed([FieldError("assets", "invalid", "an object keyed by payment code")])
        rules: dict[str, RuleInput] = {}
        errors = []
        for key, value in assets.items():
            try:
                values = validated(AutoWithdrawalRuleInputSerializer, value)
            except ValidationError as exc:
                errors += flatten_drf_errors(exc.detail, f"assets.{key}")
                continue
            rules[key] = RuleInput(
                amount=values["amount"],
                is_enabled=values["isEnabled"],
                address=values["withdrawalAddress"],
                tag=values.get("withdrawalTag"),
            )
        if errors:
            raise ValidationFailed(errors)  # all or nothing: not one rule is saved
        auto_withdrawals.auto_withdrawal_rules_set(company=current_company(request), rules=rules)
        return Response(_auto_withdrawals_body(request))
