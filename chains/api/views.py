"""The sandbox chain API: a transfer into the mempool, blocks (only where the sandbox chain is enabled)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chains import simulator as sandbox
from chains.backend import get_backend
from chains.sandbox import confirmations, tip_height
from core.api.validation import validated
from core.money import number_text
from payments.api.fields import AmountField, CodeField, StrictCharField
from payments.api.schema_types import SandboxBlocksSchema, SandboxTransactionSchema
from payments.auth import SANDBOX_API_PERMISSIONS, current_company
from payments.models import Deposit, SandboxTransaction


class SandboxDepositInputSerializer(serializers.Serializer):
    """The shape; the amount's decimals for its asset are sandbox_deposit's check."""

    address = StrictCharField(max_length=128)
    asset = CodeField(codes="sandbox", max_length=16)
    amount = AmountField()
    tag = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=64)
    outcome = serializers.ChoiceField(
        choices=SandboxTransaction.Outcome.choices, required=False, default=SandboxTransaction.Outcome.CONFIRM
    )


def _sandbox_tx(tx: SandboxTransaction) -> dict[str, Any]:
    tx.refresh_from_db()
    deposit = Deposit.objects.filter(code=tx.code, txid=tx.txid).first()
    return {
        "txid": tx.txid,
        "txHash": get_backend(tx.code).explorer_url(tx.code, tx.txid),
        "asset": tx.code,
        "address": tx.to_address,
        "tag": tx.tag or None,
        "amount": number_text(tx.amount),
        "outcome": tx.outcome,
        "confirmations": confirmations(tx, tip_height(tx.code)),
        "status": deposit.status if deposit else None,
        "routed": bool(deposit and deposit.deposit_address_id),
    }


class SandboxDepositApi(APIView):
    required_scopes = {"POST": "sandbox"}
    permission_classes = SANDBOX_API_PERMISSIONS

    @extend_schema(request=SandboxDepositInputSerializer, responses={201: SandboxTransactionSchema})
    def post(self, request: Request) -> Response:
        data = validated(SandboxDepositInputSerializer, request.data)
        values = data
        tx = sandbox.sandbox_deposit(
            company=current_company(request),
            code=values["asset"],
            address=values["address"],
            amount=values["amount"],
            tag=values.get("tag") or "",
            outcome=values["outcome"],
        )
        return Response(_sandbox_tx(tx), status=201)


class SandboxBlocksInputSerializer(serializers.Serializer):
    count = serializers.IntegerField(min_value=1, max_value=sandbox.MAX_BLOCKS_PER_CALL, default=1)
    asset = CodeField(codes="sandbox", required=False, max_length=16)


class SandboxBlocksApi(APIView):
    required_scopes = {"POST": "sandbox"}
    permission_classes = SANDBOX_API_PERMISSIONS

    @extend_schema(request=SandboxBlocksInputSerializer, responses={200: SandboxBlocksSchema})
    def post(self, request: Request) -> Response:
        data = validated(SandboxBlocksInputSerializer, request.data)
        asset = data.get("asset")
        tips = sandbox.sandbox_mine(count=data["count"], codes=[asset] if asset else None)
        return Response({"mined": data["count"], "tips": tips})
