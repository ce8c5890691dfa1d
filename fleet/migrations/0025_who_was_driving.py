"""Who was driving: the history of who had each vehicle (observations of the
vehicle list, periods with a driver), the audit of drivers set by hand, and how each
fine's driver is known. The fines' new columns have constant defaults (no row written);
their two partial indexes are built without holding writers on PostgreSQL."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0024_lists_hold_their_ids"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="FineDriverCorrection",
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
                    "from_driver_id",
                    models.PositiveBigIntegerField(
                        blank=True, null=True, verbose_name="from driver id"
                    ),
                ),
                (
                    "from_basis",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("", "not attributed yet"),
                            ("history", "had the vehicle then"),
                            ("uncertain", "changed hands around then"),
                            ("list", "the vehicle list's driver when the fine arrived"),
                            ("manual", "set by a person"),
                        ],
                        max_length=10,
                        verbose_name="from basis",
                    ),
                ),
                ("to_driver_id", models.PositiveBigIntegerField(verbose_name="to driver id")),
                ("reason", models.TextField(verbose_name="reason")),
            ],
            options={
                "verbose_name": "correction of a fine's driver",
                "verbose_name_plural": "corrections of fines' drivers",
                "ordering": ["-at", "-id"],
            },
        ),
        migrations.AlterModelOptions(
            name="fine",
            options={
                "ordering": ["treated", "-updated_at", "-id"],
                "permissions": [("change_fine_driver", "Can set who was driving for a fine")],
                "verbose_name": "fine",
                "verbose_name_plural": "fines",
            },
        ),
        migrations.AddField(
            model_name="fine",
            name="driver_basis",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "not attributed yet"),
                    ("history", "had the vehicle then"),
                    ("uncertain", "changed hands around then"),
                    ("list", "the vehicle list's driver when the fine arrived"),
                    ("manual", "set by a person"),
                ],
                default="",
                max_length=10,
                verbose_name="how the driver is known",
            ),
        ),
        migrations.CreateModel(
            name="DriverObservation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.PositiveBigIntegerField(unique=True, verbose_name="number")),
                ("at", models.DateTimeField(verbose_name="fetched at")),
                ("version", models.CharField(max_length=64, verbose_name="vehicle list version")),
                ("vehicles", models.PositiveIntegerField(verbose_name="vehicles")),
                ("opened", models.PositiveIntegerField(verbose_name="spans opened")),
                ("closed", models.PositiveIntegerField(verbose_name="spans closed")),
                ("took_ms", models.PositiveIntegerField(verbose_name="took (ms)")),
            ],
            options={
                "verbose_name": "vehicle list observation",
                "verbose_name_plural": "vehicle list observations",
                "ordering": ["-seq"],
                "indexes": [models.Index(fields=["at"], name="fleet_observation_at")],
            },
        ),
        migrations.CreateModel(
            name="DriverSpan",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("registration", models.CharField(max_length=20, verbose_name="plate")),
                (
                    "driver_id",
                    models.PositiveBigIntegerField(blank=True, null=True, verbose_name="driver id"),
                ),
                ("first_seen", models.DateTimeField(verbose_name="first seen")),
                (
                    "last_seen",
                    models.DateTimeField(blank=True, null=True, verbose_name="last seen"),
                ),
                (
                    "next_seen",
                    models.DateTimeField(
                        blank=True, null=True, verbose_name="next driver first seen"
                    ),
                ),
                (
                    "previous_driver_id",
                    models.PositiveBigIntegerField(
                        blank=True, null=True, verbose_name="previous driver id"
                    ),
                ),
                (
                    "previous_seen",
                    models.DateTimeField(
                        blank=True, null=True, verbose_name="previous driver last seen"
                    ),
                ),
            ],
            options={
                "verbose_name": "period with a driver",
                "verbose_name_plural": "periods with a driver",
                "ordering": ["registration", "-first_seen"],
                "indexes": [
                    models.Index(
                        condition=models.Q(("driver_id__isnull", False)),
                        fields=["driver_id", "first_seen"],
                        name="fleet_span_driver",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("next_seen__isnull", True)),
                        fields=("registration",),
                        name="fleet_span_one_open",
                    ),
                    models.UniqueConstraint(
                        fields=("registration", "first_seen"), name="fleet_span_vehicle"
                    ),
                ],
            },
        ),
        migrations.AddField(
            model_name="fine",
            name="driver_span",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="fleet.driverspan",
                verbose_name="period with a driver",
            ),
        ),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("driver_basis", ""), ("driver_id__isnull", True)),
                fields=["key"],
                name="fleet_fine_unattributed",
            ),
        ),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("driver_basis", "uncertain")),
                fields=["treated", "-updated_at"],
                name="fleet_fine_uncertain",
            ),
        ),
        migrations.AddField(
            model_name="finedrivercorrection",
            name="fine",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="driver_corrections",
                to="fleet.fine",
            ),
        ),
        migrations.AddField(
            model_name="finedrivercorrection",
            name="user",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
