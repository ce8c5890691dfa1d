"""CNH lookups get a public id (their URLs), a purpose and the full-CPF permission;
each display of full CPFs is recorded (`CpfDisclosure`)."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def give_public_ids(apps, schema_editor):
    CnhLookup = apps.get_model("fleet", "CnhLookup")
    for lookup in CnhLookup.objects.only("pk").iterator():
        CnhLookup.objects.filter(pk=lookup.pk).update(public_id=uuid.uuid4())


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0007_webhook_delivery_body_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="cnhlookup",
            name="public_id",
            field=models.UUIDField(editable=False, null=True, verbose_name="public id"),
        ),
        migrations.RunPython(give_public_ids, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="cnhlookup",
            name="public_id",
            field=models.UUIDField(
                default=uuid.uuid4, editable=False, unique=True, verbose_name="public id"
            ),
        ),
        # Lookups made before purposes were asked for have none recorded.
        migrations.AddField(
            model_name="cnhlookup",
            name="purpose",
            field=models.CharField(
                choices=[
                    ("hiring", "Hiring or taking on a driver"),
                    ("periodic", "Periodic check of a driver's licence"),
                    ("fine", "Naming the driver of a traffic fine"),
                    ("incident", "An accident or incident"),
                    ("other", "Another purpose (say which)"),
                ],
                default="",
                max_length=20,
                verbose_name="purpose",
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="cnhlookup",
            name="purpose_detail",
            field=models.CharField(
                blank=True, max_length=200, verbose_name="purpose, in the user's words"
            ),
        ),
        migrations.AlterModelOptions(
            name="cnhlookup",
            options={
                "ordering": ["-created_at", "-pk"],
                "permissions": [("view_full_cpf", "Can see full CPFs")],
                "verbose_name": "CNH lookup",
                "verbose_name_plural": "CNH lookups",
            },
        ),
        migrations.AddIndex(
            model_name="cnhlookup",
            index=models.Index(fields=["created_at"], name="fleet_cnh_created"),
        ),
        migrations.CreateModel(
            name="CpfDisclosure",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "shown_at",
                    models.DateTimeField(
                        db_index=True, default=django.utils.timezone.now, verbose_name="shown"
                    ),
                ),
                ("username", models.CharField(max_length=150, verbose_name="user's name then")),
                ("lookup_public_id", models.UUIDField(verbose_name="lookup's public id")),
                (
                    "place",
                    models.CharField(
                        choices=[("page", "the lookup's page"), ("admin", "the administration")],
                        max_length=10,
                        verbose_name="where",
                    ),
                ),
                ("cpf_count", models.PositiveIntegerField(verbose_name="CPFs shown")),
                (
                    "lookup",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="disclosures",
                        to="fleet.cnhlookup",
                        verbose_name="lookup",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "full CPF display",
                "verbose_name_plural": "full CPF displays",
                "ordering": ["-shown_at", "-pk"],
            },
        ),
    ]
