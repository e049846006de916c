from django.urls import path

from accounts.api import members

urlpatterns = [
    path("company/members", members.CompanyMemberListApi.as_view(), name="company-members"),
    path("company/members/<int:member_id>", members.CompanyMemberDetailApi.as_view(), name="company-member"),
    path("company/invitations", members.CompanyInvitationListApi.as_view(), name="company-invitations"),
    path(
        "company/invitations/<uuid:invitation_id>",
        members.CompanyInvitationDetailApi.as_view(),
        name="company-invitation",
    ),
]
