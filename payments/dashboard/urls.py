"""The dashboard's money pages: balances and each code's ledger. Each app adds its own pages under the same
"dashboard" namespace (config/urls.py)."""

from django.urls import URLPattern, URLResolver, path

from payments.dashboard.views import money

urlpatterns: list[URLPattern | URLResolver] = [
    path("balances/", money.balances, name="balances"),
    path("balances/<str:code>/", money.ledger, name="ledger"),
]
