from django.urls import URLPattern, URLResolver, path

from withdrawals.api import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("transactions/withdraw", views.WithdrawApi.as_view(), name="withdraw"),
    path("transactions/withdrawals", views.WithdrawalListApi.as_view(), name="withdrawals"),
    path("transactions/withdrawals/<str:uid>", views.WithdrawalDetailApi.as_view(), name="withdrawal"),
    path("company/auto-withdrawals", views.AutoWithdrawalsApi.as_view(), name="auto-withdrawals"),
    path(
        "sandbox/withdrawals/<str:uid>/reject",
        views.SandboxWithdrawalRejectApi.as_view(),
        name="sandbox-withdrawal-reject",
    ),
]
