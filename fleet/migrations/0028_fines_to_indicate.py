"""A fine as work with a deadline: whether its driver is to be indicated, by
when, and by when its slip is due, each with how it is known; the changes people make.

The columns are nullable, so that adding them to ten million fines rewrites none
(`Fine._nullable_choice`). The fines received before them get what the portal can say of
each: an indication needed (assumed: nothing said otherwise) by the day it was received
plus `FLEET_INDICATION_DAYS` (estimated), as `fleet.webhooks.deadlines` says of a fine
whose payload sends neither. Their payloads are not read: no payload sent those members
before. Not atomic: the fill walks the ids a range to a short transaction (10,000 fines,
one UPDATE per day received), and on PostgreSQL the index is built without holding
writers (`fleet.schema`)."""

from collections import defaultdict
from datetime import timedelta

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models, transaction
from django.utils import timezone

from fleet.schema import AddIndexWithoutLocking

# Ids one transaction covers.
CHUNK = 10_000


def deadlines_fill(apps, schema_editor):
    fine = apps.get_model("fleet", "Fine")
    days = timedelta(days=settings.FLEET_INDICATION_DAYS)
    unset = fine.objects.filter(indication__isnull=True)
    ids = fine.objects.aggregate(first=models.Min("pk"), last=models.Max("pk"))
    if ids["first"] is None:
        return
    for start in range(ids["first"], ids["last"] + 1, CHUNK):
        chunk = unset.filter(pk__gte=start, pk__lt=start + CHUNK)
        by_day = defaultdict(list)
        for pk, received in chunk.values_list("pk", "received_at"):
            by_day[timezone.localdate(received)].append(pk)
        with transaction.atomic():
            for day, pks in by_day.items():
                fine.objects.filter(pk__in=pks).update(
                    indication="needed",
                    indication_basis="assumed",
                    indication_due=day + days,
                    indication_due_basis="estimated",
                )


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0027_shared_cache_table"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="FineIndicationChange",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("user_name", models.CharField(max_length=300, verbose_name="by")),
                ("at", models.DateTimeField(auto_now_add=True, verbose_name="at")),
                (
                    "field",
                    models.CharField(
                        choices=[
                            ("indication_due", "indication deadline"),
                            ("payment_due", "payment due date"),
                            ("indication", "indication"),
                        ],
                        max_length=20,
                        verbose_name="changed",
                    ),
                ),
                ("before", models.CharField(blank=True, max_length=40, verbose_name="before")),
                (
                    "before_basis",
                    models.CharField(blank=True, max_length=10, verbose_name="known before as"),
                ),
                ("after", models.CharField(blank=True, max_length=40, verbose_name="after")),
                ("reason", models.TextField(verbose_name="from what, or why")),
            ],
            options={
                "verbose_name": "change of a fine's indication or deadline",
                "verbose_name_plural": "changes of fines' indications and deadlines",
                "ordering": ["-at", "-id"],
            },
        ),
        migrations.AlterModelOptions(
            name="fine",
            options={
                "ordering": ["treated", "-updated_at", "-id"],
                "permissions": [
                    ("change_fine_driver", "Can set who was driving for a fine"),
                    (
                        "change_fine_indication",
                        "Can set a fine's deadlines and whether it needs an indication",
                    ),
                ],
                "verbose_name": "fine",
                "verbose_name_plural": "fines",
            },
        ),
        migrations.AddField(
            model_name="fine",
            name="indication",
            field=models.CharField(
                blank=True,
                choices=[("needed", "to indicate"), ("not_needed", "no indication needed")],
                max_length=12,
                null=True,
                verbose_name="driver indication",
            ),
        ),
        migrations.AddField(
            model_name="fine",
            name="indication_basis",
            field=models.CharField(
                blank=True,
                choices=[
                    ("sent", "sent by the platform"),
                    ("typed", "set by a person"),
                    ("assumed", "assumed: nothing said it is not needed"),
                ],
                max_length=10,
                null=True,
                verbose_name="how the need to indicate is known",
            ),
        ),
        migrations.AddField(
            model_name="fine",
            name="indication_due",
            field=models.DateField(blank=True, null=True, verbose_name="indicate the driver by"),
        ),
        migrations.AddField(
            model_name="fine",
            name="indication_due_basis",
            field=models.CharField(
                blank=True,
                choices=[
                    ("sent", "sent by the platform"),
                    ("typed", "typed from the notice"),
                    ("estimated", "estimated: check the notice"),
                ],
                max_length=10,
                null=True,
                verbose_name="how the indication deadline is known",
            ),
        ),
        migrations.AddField(
            model_name="fine",
            name="payment_due",
            field=models.DateField(blank=True, null=True, verbose_name="payment due"),
        ),
        migrations.AddField(
            model_name="fine",
            name="payment_due_basis",
            field=models.CharField(
                blank=True,
                choices=[
                    ("sent", "sent by the platform"),
                    ("typed", "typed from the notice"),
                    ("estimated", "estimated: check the notice"),
                ],
                max_length=10,
                null=True,
                verbose_name="how the payment due date is known",
            ),
        ),
        migrations.RunPython(deadlines_fill, migrations.RunPython.noop, elidable=True),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("indication", "needed"), ("treated", False)),
                fields=["indication_due", "id"],
                name="fleet_fine_to_indicate",
            ),
        ),
        migrations.AddField(
            model_name="fineindicationchange",
            name="fine",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="indication_changes",
                to="fleet.fine",
            ),
        ),
        migrations.AddField(
            model_name="fineindicationchange",
            name="user",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
