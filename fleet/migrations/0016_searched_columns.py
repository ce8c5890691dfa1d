"""What the lists' searches read, out of the payloads into columns: a fine's notice
number (`reference`) and infraction, a notification's title (`heading`), the shared
texts once each in `Wording`. Not atomic: the existing records are filled a chunk to a
transaction, and on PostgreSQL the indexes are built without holding writers
(`fleet.schema`)."""

import hashlib

import django.db.models.deletion
from django.db import migrations, models, transaction

from fleet.schema import AddIndexWithoutLocking
from fleet.webhooks.payloads import FINE, NOTIFICATION, payload_reference, payload_wording

CHUNK = 1000


def fill(apps, schema_editor):
    wording = apps.get_model("fleet", "Wording")
    for name, kind, field in (
        ("Fine", FINE, "infraction"),
        ("Notification", NOTIFICATION, "heading"),
    ):
        model = apps.get_model("fleet", name)
        last = 0
        while chunk := list(
            model.objects.filter(pk__gt=last).order_by("pk").only("pk", "payload")[:CHUNK]
        ):
            with transaction.atomic():
                texts = {record.pk: payload_wording(record.payload, kind=kind) for record in chunk}
                by_digest = {
                    hashlib.sha256(text.encode()).hexdigest(): text
                    for text in texts.values()
                    if text
                }
                wording.objects.bulk_create(
                    [
                        wording(text=text, digest=digest)
                        for digest, text in sorted(by_digest.items())
                    ],
                    ignore_conflicts=True,
                )
                ids = {
                    by_digest[digest]: pk
                    for digest, pk in wording.objects.filter(digest__in=by_digest).values_list(
                        "digest", "pk"
                    )
                }
                fields = [f"{field}_id"]
                for record in chunk:
                    setattr(record, f"{field}_id", ids.get(texts[record.pk]))
                    if kind == FINE:
                        record.reference = payload_reference(record.payload)
                model.objects.bulk_update(
                    chunk, [*fields, *(["reference"] if kind == FINE else [])]
                )
            last = chunk[-1].pk


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0015_driver_words"),
    ]

    operations = [
        migrations.CreateModel(
            name="Wording",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("text", models.TextField(verbose_name="text")),
                (
                    "digest",
                    models.CharField(
                        max_length=64, unique=True, verbose_name="SHA-256 of the text"
                    ),
                ),
            ],
            options={
                "verbose_name": "wording",
                "verbose_name_plural": "wordings",
            },
        ),
        migrations.AddField(
            model_name="fine",
            name="reference",
            field=models.CharField(
                blank=True, default="", max_length=60, verbose_name="notice number"
            ),
        ),
        migrations.AddField(
            model_name="fine",
            name="infraction",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="fleet.wording",
                verbose_name="infraction",
            ),
        ),
        migrations.AddField(
            model_name="notification",
            name="heading",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="fleet.wording",
                verbose_name="title",
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(fields=["reference"], name="fleet_fine_reference"),
        ),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                fields=["infraction", "treated", "-updated_at"], name="fleet_fine_infraction"
            ),
        ),
        AddIndexWithoutLocking(
            model_name="notification",
            index=models.Index(
                fields=["heading", "treated", "-updated_at"], name="fleet_notification_heading"
            ),
        ),
    ]
