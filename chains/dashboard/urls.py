"""The sandbox panel of the merchant dashboard (mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from chains.dashboard import views

urlpatterns: list[URLPattern] = [
    path("sandbox/", views.sandbox, name="sandbox"),
    path("sandbox/deposit/", views.sandbox_deposit_view, name="sandbox_deposit"),
    path("sandbox/mine/", views.sandbox_mine_view, name="sandbox_mine"),
    path("status/", views.chain_status_view, name="chain_status"),
]
