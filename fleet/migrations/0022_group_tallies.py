"""Each vehicle group's own tallies (`GroupTally`): a region's dashboard reads a few rows
instead of summing its fines (48 s for a region of three million fines, after each
fine). Existing groups are counted by the worker (`group_tallies_catch_up`), asked for
by the first dashboard that finds them not counted; until then, as before."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0021_lists_in_their_whole_order"),
    ]

    operations = [
        migrations.AddField(
            model_name="vehiclegroup",
            name="tallied_revision",
            field=models.PositiveIntegerField(
                blank=True, editable=False, null=True, verbose_name="figures counted at revision"
            ),
        ),
        migrations.CreateModel(
            name="GroupTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "dimension",
                    models.CharField(
                        choices=[
                            ("untreated", "untreated fines"),
                            ("month", "fines by month committed"),
                            ("vehicle", "untreated fines by vehicle"),
                            ("driver", "untreated fines by driver"),
                            ("day", "fines by day received"),
                            ("no_document", "fines without their document"),
                            ("version", "changes of the tallies"),
                        ],
                        max_length=12,
                        verbose_name="dimension",
                    ),
                ),
                ("key", models.CharField(blank=True, max_length=20, verbose_name="key")),
                ("count", models.BigIntegerField(default=0, verbose_name="fines")),
                ("cents", models.BigIntegerField(default=0, verbose_name="amount (R$ cents)")),
                (
                    "group",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tallies",
                        to="fleet.vehiclegroup",
                        verbose_name="group",
                    ),
                ),
            ],
            options={
                "verbose_name": "vehicle group's fine tally",
                "verbose_name_plural": "vehicle groups' fine tallies",
                "indexes": [
                    models.Index(
                        fields=["group", "dimension", "-cents", "-count", "key"],
                        name="fleet_group_tally_amount",
                    ),
                    models.Index(
                        fields=["group", "dimension", "-count", "key"],
                        name="fleet_group_tally_count",
                    ),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("group", "dimension", "key"), name="fleet_group_tally_key"
                    )
                ],
            },
        ),
    ]
