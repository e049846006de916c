"""The withdrawal pages of the merchant dashboard (mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from withdrawals.dashboard import confirm, policy, views

urlpatterns: list[URLPattern] = [
    path("withdrawals/", views.withdrawal_list, name="withdrawal_list"),
    path("withdrawals/export.csv", views.withdrawal_export, name="withdrawal_export"),
    path("withdrawals/new/", views.withdrawal_new, name="withdrawal_new"),
    path("withdrawals/bulk/", views.withdrawal_bulk, name="withdrawal_bulk"),
    path("withdrawals/rules/", views.withdrawal_rules, name="withdrawal_rules"),
    path("withdrawals/policy/", policy.withdrawal_policy, name="withdrawal_policy"),
    path("withdrawals/policy/addresses/", policy.payout_address_new, name="payout_address_new"),
    path(
        "withdrawals/policy/addresses/<int:address_id>/remove/",
        policy.payout_address_delete,
        name="payout_address_delete",
    ),
    path("withdrawals/confirm/<str:token>/", confirm.withdrawal_confirm, name="withdrawal_confirm"),
    path("withdrawals/<str:uid>/approve/", confirm.withdrawal_approve, name="withdrawal_approve"),
    path("withdrawals/<str:uid>/cancel/", confirm.withdrawal_cancel, name="withdrawal_cancel"),
    path("withdrawals/<str:uid>/", views.withdrawal_detail, name="withdrawal_detail"),
]
