"""The withdrawal pages of the merchant dashboard (mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from withdrawals.dashboard import views

urlpatterns: list[URLPattern] = [
    path("withdrawals/", views.withdrawal_list, name="withdrawal_list"),
    path("withdrawals/export.csv", views.withdrawal_export, name="withdrawal_export"),
    path("withdrawals/new/", views.withdrawal_new, name="withdrawal_new"),
    path("withdrawals/bulk/", views.withdrawal_bulk, name="withdrawal_bulk"),
    path("withdrawals/rules/", views.withdrawal_rules, name="withdrawal_rules"),
    path("withdrawals/<str:uid>/", views.withdrawal_detail, name="withdrawal_detail"),
]
