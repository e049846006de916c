"""The company's members through the API (scope `team`), like the dashboard's team page: list, invite,
change a role, remove; list and revoke open invitations. The same audited road as the page (accounts.team).

Who acts: the company's own token (and a token made on the command line) acts as an owner; a named token
acts as its creator's role when that creator is an owner, else as an admin (only owners and admins can
give a token the `team` scope, payments.roles.token_scopes).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.team import team_invite, team_invite_revoke, team_remove, team_set_role
from core.api.pagination import PAGE_PARAMETERS, KassaPagination, page_serializer
from core.api.validation import validated
from payments.auth import ApiCredential, current_company
from payments.members import invitation_list_open, member_list_for_company
from payments.models import Membership
from payments.roles import ADMIN, OWNER, ROLES
from payments.schema import problem

ROLE_HELP = f"One of {', '.join(ROLES)}; only an owner's token gives or takes owner."


def _actor(request: Request) -> tuple[str, Any]:
    """(role, user) the call acts as."""
    credential = request.auth
    assert isinstance(credential, ApiCredential)  # IsMerchant let it in
    creator = credential.created_by_id
    if credential.token_id is None or creator is None:
        return OWNER, None
    member = Membership.objects.select_related("user").filter(user_id=creator).first()
    in_company = member is not None and member.company_id == credential.company.pk
    if member is not None and in_company and member.role == OWNER:
        return OWNER, member.user
    return ADMIN, member.user if member is not None and in_company else None


@extend_schema_serializer(component_name="Member")
class MemberOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    email = serializers.EmailField(source="user.email")
    role = serializers.ChoiceField(choices=ROLES)
    createdAt = serializers.DateTimeField(source="created_at")
    invitedBy = serializers.EmailField(source="invited_by.email", allow_null=True, default=None)


@extend_schema_serializer(component_name="Invitation")
class InvitationOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=ROLES)
    createdAt = serializers.DateTimeField(source="created_at")
    expiresAt = serializers.DateTimeField(source="expires_at")
    invitedBy = serializers.EmailField(source="invited_by.email", allow_null=True, default=None)


class MemberInviteInputSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=ROLES, help_text=ROLE_HELP)


class MemberRoleInputSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLES, help_text=ROLE_HELP)


class CompanyMemberListApi(APIView):
    required_scopes = {"GET": "team", "POST": "team"}

    @extend_schema(
        parameters=PAGE_PARAMETERS,
        responses={200: page_serializer("MemberPage", MemberOutputSerializer)},
        summary="Members, oldest first",
    )
    def get(self, request: Request) -> Response:
        members = member_list_for_company(company=current_company(request))
        paginator = KassaPagination()
        page = paginator.paginate_queryset(members, request, view=self)
        return paginator.get_paginated_response(MemberOutputSerializer(page, many=True).data)

    @extend_schema(
        request=MemberInviteInputSerializer,
        responses={201: InvitationOutputSerializer},
        summary="Invite by e-mail (the link goes by mail only; replaces an open invitation of the address)",
    )
    def post(self, request: Request) -> Response:
        data = validated(MemberInviteInputSerializer, request.data)
        role, user = _actor(request)
        invitation = team_invite(
            request,
            company=current_company(request),
            email=data["email"],
            role=data["role"],
            actor_role=role,
            by=user,
        )
        return Response(InvitationOutputSerializer(invitation).data, status=201)


class CompanyMemberDetailApi(APIView):
    required_scopes = {"PATCH": "team", "DELETE": "team"}

    @extend_schema(
        request=MemberRoleInputSerializer,
        responses={
            200: MemberOutputSerializer,
            409: problem(
                "The member is the company's last owner (`last_owner`): make another member owner first."
            ),
        },
        summary="Change a role",
    )
    def patch(self, request: Request, member_id: int) -> Response:
        data = validated(MemberRoleInputSerializer, request.data)
        role, user = _actor(request)
        member, _ = team_set_role(
            request,
            company=current_company(request),
            member_id=member_id,
            role=data["role"],
            actor_role=role,
            by=user,
        )
        return Response(MemberOutputSerializer(member).data)

    @extend_schema(
        responses={
            200: MemberOutputSerializer,
            409: problem("The member is the company's last owner (`last_owner`)."),
        },
        summary="Remove a member (their sessions end; their tokens stay); answers the member as they were",
    )
    def delete(self, request: Request, member_id: int) -> Response:
        role, user = _actor(request)
        removed = team_remove(
            request, company=current_company(request), member_id=member_id, actor_role=role, by=user
        )
        return Response({**MemberOutputSerializer(removed).data, "id": member_id})  # its row is gone


class CompanyInvitationListApi(APIView):
    required_scopes = {"GET": "team"}

    @extend_schema(
        parameters=PAGE_PARAMETERS,
        responses={200: page_serializer("InvitationPage", InvitationOutputSerializer)},
        summary="Open invitations, newest first",
    )
    def get(self, request: Request) -> Response:
        invitations = invitation_list_open(company=current_company(request))
        paginator = KassaPagination()
        page = paginator.paginate_queryset(invitations, request, view=self)
        return paginator.get_paginated_response(InvitationOutputSerializer(page, many=True).data)


class CompanyInvitationDetailApi(APIView):
    required_scopes = {"DELETE": "team"}

    @extend_schema(
        responses={200: InvitationOutputSerializer},
        summary="Revoke an open invitation (its link stops working); answers the invitation",
    )
    def delete(self, request: Request, invitation_id: UUID) -> Response:
        role, user = _actor(request)
        invitation, _ = team_invite_revoke(
            request, company=current_company(request), invitation_id=invitation_id, actor_role=role, by=user
        )
        return Response(InvitationOutputSerializer(invitation).data)
