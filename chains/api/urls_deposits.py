from django.urls import path

from chains.api import deposits

urlpatterns = [
    path("addresses/v1/static-deposits", deposits.StaticDepositCreateApi.as_view(), name="static-deposits"),
]
