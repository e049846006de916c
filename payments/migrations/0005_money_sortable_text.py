"""SQLite only: money columns move from plain decimal text to the order-preserving text of
core.fields (numbers sort and compare as numbers). PostgreSQL keeps numeric(36, 18): nothing to do."""


from django.db import migrations

from core.fields import decode_sortable, encode_sortable


def _money_columns(apps):
    for model in apps.get_models():
        columns = [f.column for f in model._meta.concrete_fields if f.get_internal_type() == "MoneyField"]
        if columns:
            yield model._meta.db_table, model._meta.pk.column, columns


def _rewrite(apps, schema_editor, convert):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        for table, pk, columns in _money_columns(apps):
            for column in columns:
                cursor.execute(f'SELECT "{pk}", "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL')
                rows = cursor.fetchall()
                for key, text in rows:
                    cursor.execute(
                        f'UPDATE "{table}" SET "{column}" = %s WHERE "{pk}" = %s', [convert(str(text)), key]
                    )


def to_sortable(apps, schema_editor):
    _rewrite(apps, schema_editor, lambda text: encode_sortable(decode_sortable(text)))


def to_plain(apps, schema_editor):
    _rewrite(apps, schema_editor, lambda text: str(decode_sortable(text)))


class Migration(migrations.Migration):
    dependencies = [
        ("payments", "0004_signing_secret_overlap"),
        ("invoices", "0001_initial"),
        ("withdrawals", "0001_initial"),
    ]

    operations = [migrations.RunPython(to_sortable, to_plain)]
