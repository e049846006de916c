from django.urls import path

from chains.api import views

urlpatterns = [
    path("sandbox/deposits", views.SandboxDepositApi.as_view(), name="sandbox-deposits"),
    path("sandbox/blocks", views.SandboxBlocksApi.as_view(), name="sandbox-blocks"),
]
