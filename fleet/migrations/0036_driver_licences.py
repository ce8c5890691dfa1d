"""A driver's CPF (encrypted, and its keyed digest) and licence: the newest CNH lookup's
answer for that CPF and when it came; the permission to enter a driver's CPF; and a
record of full CPFs shown on a driver's page (`CpfDisclosure.driver_number`, its lookup
then optional). The drivers' new columns are nullable, added without rewriting the
table; their indexes are built without holding writers on PostgreSQL (hence not
atomic)."""

# Written by hand on 2026-12-07

import django.db.models.deletion
from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0035_driver_basis"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="driver",
            options={
                "ordering": ["name", "driver_id"],
                "permissions": [("change_driver_cpf", "Can enter a driver's CPF")],
                "verbose_name": "driver",
                "verbose_name_plural": "drivers",
            },
        ),
        migrations.AddField(
            model_name="driver",
            name="cpf_encrypted",
            field=models.TextField(
                blank=True, editable=False, null=True, verbose_name="CPF (encrypted)"
            ),
        ),
        migrations.AddField(
            model_name="driver",
            name="cpf_digest",
            field=models.CharField(
                blank=True, editable=False, max_length=64, null=True, verbose_name="CPF's digest"
            ),
        ),
        migrations.AddField(
            model_name="driver",
            name="licence",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="fleet.cnhlookupitem",
                verbose_name="latest licence lookup",
            ),
        ),
        migrations.AddField(
            model_name="driver",
            name="licence_checked_at",
            field=models.DateTimeField(
                blank=True, editable=False, null=True, verbose_name="licence last looked up"
            ),
        ),
        AddIndexWithoutLocking(
            model_name="driver",
            index=models.Index(
                condition=models.Q(("cpf_digest__isnull", False)),
                fields=["cpf_digest"],
                name="fleet_driver_cpf",
            ),
        ),
        AddIndexWithoutLocking(
            model_name="driver",
            index=models.Index(
                condition=models.Q(("cpf_digest__isnull", False)),
                fields=["id"],
                name="fleet_driver_with_cpf",
            ),
        ),
        AddIndexWithoutLocking(
            model_name="driver",
            index=models.Index(fields=["licence"], name="fleet_driver_licence"),
        ),
        migrations.AddField(
            model_name="cpfdisclosure",
            name="driver_number",
            field=models.PositiveBigIntegerField(blank=True, null=True, verbose_name="driver id"),
        ),
        migrations.AlterField(
            model_name="cpfdisclosure",
            name="lookup_public_id",
            field=models.UUIDField(blank=True, null=True, verbose_name="lookup's public id"),
        ),
        migrations.AlterField(
            model_name="cpfdisclosure",
            name="place",
            field=models.CharField(
                choices=[
                    ("page", "the lookup's page"),
                    ("admin", "the administration"),
                    ("packet", "an indication packet (PDF)"),
                    ("driver", "a driver's page"),
                ],
                max_length=10,
                verbose_name="where",
            ),
        ),
    ]
