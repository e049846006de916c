from __future__ import annotations

from celery import shared_task

from invoices import services


@shared_task(ignore_result=True)
def invoice_expire_due() -> None:
    services.close_overdue_invoices()
