"""The static deposit addresses, the sandbox panel and the chain status of the merchant dashboard
(mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from chains.dashboard import deposits, unrouted, views

urlpatterns: list[URLPattern] = [
    path("addresses/", deposits.static_addresses, name="static_addresses"),
    path("sandbox/", views.sandbox, name="sandbox"),
    path("sandbox/deposit/", views.sandbox_deposit_view, name="sandbox_deposit"),
    path("sandbox/mine/", views.sandbox_mine_view, name="sandbox_mine"),
    path("status/", views.chain_status_view, name="chain_status"),
    path("claims/", unrouted.payment_claims, name="payment_claims"),
    path("unrouted/", unrouted.unrouted_page, name="unrouted"),
    path("unrouted/<int:unrouted_id>/assign/", unrouted.unrouted_assign_view, name="unrouted_assign"),
    path("unrouted/<int:unrouted_id>/refund/", unrouted.unrouted_refund_view, name="unrouted_refund"),
    path("unrouted/<int:unrouted_id>/keep/", unrouted.unrouted_keep_view, name="unrouted_keep"),
]
