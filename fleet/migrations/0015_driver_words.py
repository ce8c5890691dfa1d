"""The words of the drivers' names, which the pickers search by ranges of an index; those
of the names already kept written in chunks of a short transaction each."""

import django.db.models.deletion
from django.db import migrations, models

from fleet.services.drivers import NAME_WORDS, name_words

CHUNK = 1000


def index_names(apps, schema_editor):
    driver_model = apps.get_model("fleet", "Driver")
    word_model = apps.get_model("fleet", "DriverWord")
    last = 0
    while chunk := list(driver_model.objects.filter(pk__gt=last).order_by("pk")[:CHUNK]):
        word_model.objects.bulk_create(
            word_model(driver=driver, word=word)
            for driver in chunk
            for word in name_words(driver.name)[:NAME_WORDS]
        )
        last = chunk[-1].pk


class Migration(migrations.Migration):
    # Each chunk in a transaction of its own: nothing waits behind the whole backfill.
    atomic = False

    dependencies = [
        ("fleet", "0014_scope_version"),
    ]

    operations = [
        migrations.CreateModel(
            name="DriverWord",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("word", models.CharField(max_length=40, verbose_name="word")),
                (
                    "driver",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="words",
                        to="fleet.driver",
                    ),
                ),
            ],
            options={
                "verbose_name": "word of a driver's name",
                "verbose_name_plural": "words of drivers' names",
                "indexes": [models.Index(fields=["word", "driver"], name="fleet_driver_word")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("driver", "word"), name="fleet_driver_word_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(index_names, migrations.RunPython.noop, atomic=False),
    ]
