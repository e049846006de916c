"""Deposits recorded with no owner before unrouted deposits existed become unrouted deposits: open while the
transfer is seen or confirmed, void when the chain failed, froze or dropped it."""

from django.db import migrations


def backfill(apps, schema_editor):
    from chains.addresses import route_key  # a pure function of (code, address): the spelling routing uses

    Deposit = apps.get_model("payments", "Deposit")
    DepositAddress = apps.get_model("payments", "DepositAddress")
    UnroutedDeposit = apps.get_model("chains", "UnroutedDeposit")
    UnroutedEvent = apps.get_model("chains", "UnroutedEvent")
    orphans = Deposit.objects.filter(deposit_address__isnull=True, unrouted__isnull=True).order_by("pk")
    for deposit in orphans.iterator():
        key = route_key(deposit.code, deposit.address)
        if deposit.company_id is not None:
            reason = "wrong_asset"
        elif not DepositAddress.objects.filter(route_key=key).exists():
            reason = "unknown_address"
        else:
            reason = "unknown_tag" if deposit.tag.strip() else "no_tag"
        status = "open" if deposit.status in ("seen", "confirmed") else "void"
        unrouted = UnroutedDeposit.objects.create(deposit=deposit, code=deposit.code, reason=reason, status=status)
        UnroutedEvent.objects.create(unrouted=unrouted, action="record", by="kassa", detail=f"{reason} (backfill)")


class Migration(migrations.Migration):
    dependencies = [("chains", "0007_unrouted_deposits")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
