"""The fleet's tables as they stand after its first 25 migrations, in one.

It replaces them (`replaces`): a database that has applied all of them takes this one as
applied and changes nothing; a new database is built by it alone. A database part-way
through them is first brought up to 0025 by the release that still carries them (the
README's "Upgrading"). Of their data migrations, only what a new database needs is kept:
the "Whole fleet" group with its permission, and the first version of the vehicle scopes.
"""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import fleet.schema


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("fleet", "0001_fleet_accounts_and_mints"),
        ("fleet", "0002_cnh_lookups"),
        ("fleet", "0003_webhook_deliveries_fines_notifications"),
        ("fleet", "0004_webhook_delivery_partial_indexes"),
        ("fleet", "0005_webhook_record_registration"),
        ("fleet", "0006_cnh_outcome_unknown"),
        ("fleet", "0007_webhook_delivery_body_index"),
        ("fleet", "0008_cnh_lookup_purpose_public_id_cpf_disclosures"),
        ("fleet", "0009_webhook_unknown_keys_overflow"),
        ("fleet", "0010_fine_amounts_drivers_saved_views"),
        ("fleet", "0011_fine_tallies"),
        ("fleet", "0012_vehicle_groups"),
        ("fleet", "0013_crlv_request_vehicles"),
        ("fleet", "0014_scope_version"),
        ("fleet", "0015_driver_words"),
        ("fleet", "0016_searched_columns"),
        ("fleet", "0017_delivery_bodies_kept"),
        ("fleet", "0018_sorted_lists"),
        ("fleet", "0019_listed_without_document"),
        ("fleet", "0020_lists_hold_plates"),
        ("fleet", "0021_lists_in_their_whole_order"),
        ("fleet", "0022_group_tallies"),
        ("fleet", "0023_lists_without_their_ids"),
        ("fleet", "0024_lists_hold_their_ids"),
        ("fleet", "0025_who_was_driving"),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="CrlvRequestVehicle",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "request_id",
                    models.CharField(max_length=200, unique=True, verbose_name="request id"),
                ),
                (
                    "registration",
                    models.CharField(
                        db_index=True, max_length=7, verbose_name="plate (Mercosul format)"
                    ),
                ),
                (
                    "seen_at",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="last seen"
                    ),
                ),
            ],
            options={
                "verbose_name": "vehicle of an e-CRLV request",
                "verbose_name_plural": "vehicles of e-CRLV requests",
            },
        ),
        migrations.CreateModel(
            name="Driver",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "driver_id",
                    models.PositiveBigIntegerField(unique=True, verbose_name="driver id"),
                ),
                ("name", models.CharField(max_length=150, verbose_name="driver's name")),
            ],
            options={
                "verbose_name": "driver",
                "verbose_name_plural": "drivers",
                "ordering": ["name", "driver_id"],
            },
        ),
        migrations.CreateModel(
            name="Notification",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=120, unique=True, verbose_name="key")),
                (
                    "external_id",
                    models.CharField(
                        blank=True, max_length=100, verbose_name="id in the fleet platform"
                    ),
                ),
                ("treated", models.BooleanField(verbose_name="treated")),
                (
                    "treated_history",
                    models.JSONField(blank=True, default=list, verbose_name="history of treated"),
                ),
                ("payload", models.JSONField(default=dict, verbose_name="last payload")),
                (
                    "source_updated_at",
                    models.DateTimeField(null=True, verbose_name="updated in the fleet platform"),
                ),
                (
                    "registration",
                    models.CharField(
                        blank=True, default="", max_length=20, verbose_name="vehicle registration"
                    ),
                ),
                (
                    "received_at",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="received"
                    ),
                ),
                (
                    "updated_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="updated"),
                ),
            ],
            options={
                "verbose_name": "notification",
                "verbose_name_plural": "notifications",
                "ordering": ["treated", "-updated_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="ScopeVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("value", models.BigIntegerField(default=0, verbose_name="changes")),
            ],
            options={
                "verbose_name": "version of the vehicle scopes",
                "verbose_name_plural": "versions of the vehicle scopes",
            },
        ),
        migrations.CreateModel(
            name="VehicleGroup",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100, unique=True, verbose_name="name")),
                (
                    "description",
                    models.CharField(blank=True, max_length=300, verbose_name="description"),
                ),
                (
                    "revision",
                    models.PositiveIntegerField(default=0, editable=False, verbose_name="revision"),
                ),
                (
                    "tallied_revision",
                    models.PositiveIntegerField(
                        blank=True,
                        editable=False,
                        null=True,
                        verbose_name="figures counted at revision",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
            ],
            options={
                "verbose_name": "vehicle group",
                "verbose_name_plural": "vehicle groups",
                "ordering": ["name"],
                "permissions": [
                    ("view_whole_fleet", "Can see the whole fleet, vehicles in no group too")
                ],
            },
        ),
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
        migrations.CreateModel(
            name="AccessKeyMint",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "created_at",
                    models.DateTimeField(auto_now_add=True, db_index=True, verbose_name="when"),
                ),
                (
                    "fleet_email",
                    models.EmailField(
                        blank=True, max_length=254, verbose_name="fleet login e-mail"
                    ),
                ),
                (
                    "purpose",
                    models.CharField(
                        choices=[
                            ("embed", "embedded application"),
                            ("deep_link", "open in a new tab"),
                            ("link_check", "check of a new fleet login"),
                            ("admin_test", "administrator's test"),
                        ],
                        max_length=20,
                        verbose_name="purpose",
                    ),
                ),
                (
                    "outcome",
                    models.CharField(
                        choices=[
                            ("minted", "key minted"),
                            ("no_account", "no fleet login linked"),
                            ("login_rejected", "fleet login rejected"),
                            ("credentials_rejected", "portal API credentials rejected"),
                            ("permission_denied", "no permission for the company"),
                            ("rate_limited", "rate limited"),
                            ("unavailable", "fleet service unavailable"),
                            ("error", "other error"),
                        ],
                        max_length=30,
                        verbose_name="outcome",
                    ),
                ),
                (
                    "trace_id",
                    models.CharField(blank=True, max_length=100, verbose_name="upstream trace id"),
                ),
                ("detail", models.CharField(blank=True, max_length=500, verbose_name="detail")),
                (
                    "duration_ms",
                    models.PositiveIntegerField(null=True, verbose_name="duration (ms)"),
                ),
                (
                    "user",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="portal user",
                    ),
                ),
            ],
            options={
                "verbose_name": "accessKey mint",
                "verbose_name_plural": "accessKey mints",
                "ordering": ["-created_at"],
            },
        ),
        migrations.CreateModel(
            name="CnhLookup",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "public_id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, unique=True, verbose_name="public id"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("single", "individual"), ("batch", "batch")],
                        max_length=10,
                        verbose_name="kind",
                    ),
                ),
                (
                    "purpose",
                    models.CharField(
                        choices=[
                            ("hiring", "Hiring or taking on a driver"),
                            ("periodic", "Periodic check of a driver's licence"),
                            ("fine", "Naming the driver of a traffic fine"),
                            ("incident", "An accident or incident"),
                            ("other", "Another purpose (say which)"),
                        ],
                        max_length=20,
                        verbose_name="purpose",
                    ),
                ),
                (
                    "purpose_detail",
                    models.CharField(
                        blank=True, max_length=200, verbose_name="purpose, in the user's words"
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("waiting_retry", "Waiting to retry"),
                            ("done", "Done"),
                            ("failed", "Failed"),
                            ("unknown", "Outcome unknown"),
                        ],
                        default="queued",
                        max_length=20,
                        verbose_name="status",
                    ),
                ),
                ("attempts", models.PositiveSmallIntegerField(default=0, verbose_name="attempts")),
                (
                    "next_attempt_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="next attempt"),
                ),
                (
                    "reason",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("upstream_timeout", "the licensing service did not answer in time"),
                            ("rate_limited", "the fleet service asked us to wait"),
                            ("unavailable", "the fleet service could not be reached"),
                            ("no_answer", "the fleet service did not answer"),
                            ("server_error", "the fleet service had an internal error"),
                            ("credentials_rejected", "the portal's API credentials were refused"),
                            ("permission_denied", "no permission for the company"),
                            ("rejected", "the fleet service refused the request"),
                            ("invalid_response", "the fleet service answered something unexpected"),
                        ],
                        max_length=30,
                        verbose_name="reason",
                    ),
                ),
                ("detail", models.CharField(blank=True, max_length=500, verbose_name="detail")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated")),
                (
                    "finished_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="finished"),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="cnh_lookups",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="requested by",
                    ),
                ),
            ],
            options={
                "verbose_name": "CNH lookup",
                "verbose_name_plural": "CNH lookups",
                "ordering": ["-created_at", "-pk"],
                "permissions": [("view_full_cpf", "Can see full CPFs")],
            },
        ),
        migrations.CreateModel(
            name="CnhLookupItem",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("position", models.PositiveIntegerField(verbose_name="position")),
                ("cpf", models.CharField(max_length=11, verbose_name="CPF")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("ok", "Found"),
                            ("error", "Error"),
                            ("unknown", "Outcome unknown"),
                        ],
                        default="pending",
                        max_length=10,
                        verbose_name="status",
                    ),
                ),
                ("result", models.JSONField(blank=True, null=True, verbose_name="result")),
                (
                    "error_code",
                    models.CharField(blank=True, max_length=100, verbose_name="error code"),
                ),
                (
                    "error_message",
                    models.CharField(blank=True, max_length=500, verbose_name="error message"),
                ),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated")),
                (
                    "lookup",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="items",
                        to="fleet.cnhlookup",
                        verbose_name="lookup",
                    ),
                ),
            ],
            options={
                "verbose_name": "CNH lookup item",
                "verbose_name_plural": "CNH lookup items",
                "ordering": ["lookup", "position"],
            },
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
            },
        ),
        migrations.CreateModel(
            name="Fine",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=120, unique=True, verbose_name="key")),
                (
                    "external_id",
                    models.CharField(
                        blank=True, max_length=100, verbose_name="id in the fleet platform"
                    ),
                ),
                ("treated", models.BooleanField(verbose_name="treated")),
                (
                    "treated_history",
                    models.JSONField(blank=True, default=list, verbose_name="history of treated"),
                ),
                ("payload", models.JSONField(default=dict, verbose_name="last payload")),
                (
                    "source_updated_at",
                    models.DateTimeField(null=True, verbose_name="updated in the fleet platform"),
                ),
                (
                    "registration",
                    models.CharField(
                        blank=True, default="", max_length=20, verbose_name="vehicle registration"
                    ),
                ),
                (
                    "received_at",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="received"
                    ),
                ),
                (
                    "updated_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="updated"),
                ),
                (
                    "link_frame",
                    models.TextField(blank=True, verbose_name="official infraction document"),
                ),
                ("link", models.TextField(blank=True, verbose_name="payment slip")),
                (
                    "amount",
                    models.DecimalField(
                        blank=True,
                        decimal_places=2,
                        max_digits=12,
                        null=True,
                        verbose_name="amount (R$)",
                    ),
                ),
                (
                    "occurred_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="committed on"),
                ),
                (
                    "driver_id",
                    models.PositiveBigIntegerField(blank=True, null=True, verbose_name="driver id"),
                ),
                (
                    "driver_basis",
                    models.CharField(
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
                (
                    "reference",
                    models.CharField(
                        blank=True, default="", max_length=60, verbose_name="notice number"
                    ),
                ),
                (
                    "driver_span",
                    models.ForeignKey(
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
                (
                    "infraction",
                    models.ForeignKey(
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
            ],
            options={
                "verbose_name": "fine",
                "verbose_name_plural": "fines",
                "ordering": ["treated", "-updated_at", "-id"],
                "permissions": [("change_fine_driver", "Can set who was driving for a fine")],
            },
        ),
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
                (
                    "fine",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="driver_corrections",
                        to="fleet.fine",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "correction of a fine's driver",
                "verbose_name_plural": "corrections of fines' drivers",
                "ordering": ["-at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="FineTally",
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
            ],
            options={
                "verbose_name": "fine tally",
                "verbose_name_plural": "fine tallies",
                "indexes": [
                    models.Index(
                        fields=["dimension", "-cents", "-count", "key"], name="fleet_tally_amount"
                    ),
                    models.Index(fields=["dimension", "-count", "key"], name="fleet_tally_count"),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("dimension", "key"), name="fleet_fine_tally_key"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="FleetAccount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("email", models.EmailField(max_length=254, verbose_name="fleet login e-mail")),
                (
                    "password_encrypted",
                    models.TextField(editable=False, verbose_name="fleet password (encrypted)"),
                ),
                (
                    "last_success_at",
                    models.DateTimeField(
                        blank=True, null=True, verbose_name="last successful login"
                    ),
                ),
                (
                    "last_failure_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="last failed login"),
                ),
                (
                    "last_failure_outcome",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("minted", "key minted"),
                            ("no_account", "no fleet login linked"),
                            ("login_rejected", "fleet login rejected"),
                            ("credentials_rejected", "portal API credentials rejected"),
                            ("permission_denied", "no permission for the company"),
                            ("rate_limited", "rate limited"),
                            ("unavailable", "fleet service unavailable"),
                            ("error", "other error"),
                        ],
                        max_length=30,
                        verbose_name="reason of the last failure",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated")),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="fleet_account",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="portal user",
                    ),
                ),
            ],
            options={
                "verbose_name": "fleet account",
                "verbose_name_plural": "fleet accounts",
                "ordering": ["user__username"],
            },
        ),
        migrations.CreateModel(
            name="SavedFineView",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=60, verbose_name="name of the view")),
                (
                    "query",
                    models.CharField(
                        blank=True, max_length=500, verbose_name="filters (query string)"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="saved_fine_views",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="portal user",
                    ),
                ),
            ],
            options={
                "verbose_name": "saved view of the fines",
                "verbose_name_plural": "saved views of the fines",
                "ordering": ["user", "name"],
            },
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
            },
        ),
        migrations.CreateModel(
            name="DirectoryGroup",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("provider", models.CharField(max_length=200, verbose_name="identity provider")),
                (
                    "value",
                    models.CharField(max_length=255, verbose_name="value of the groups claim"),
                ),
                (
                    "group",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="directory_groups",
                        to="fleet.vehiclegroup",
                        verbose_name="vehicle group",
                    ),
                ),
            ],
            options={
                "verbose_name": "group of an identity provider",
                "verbose_name_plural": "groups of identity providers",
                "ordering": ["provider", "value"],
            },
        ),
        migrations.CreateModel(
            name="VehicleGroupMember",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "provider",
                    models.CharField(
                        blank=True,
                        help_text=(
                            "Empty: given by hand, kept until removed by hand. Otherwise the "
                            "identity provider whose groups give it, applied again at every "
                            "sign-in."
                        ),
                        max_length=200,
                        verbose_name="given by",
                    ),
                ),
                ("granted_at", models.DateTimeField(auto_now_add=True, verbose_name="given")),
                (
                    "group",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="members",
                        to="fleet.vehiclegroup",
                        verbose_name="group",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="vehicle_group_memberships",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "member of a vehicle group",
                "verbose_name_plural": "members of vehicle groups",
            },
        ),
        migrations.CreateModel(
            name="VehicleGroupPlate",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "registration",
                    models.CharField(max_length=7, verbose_name="plate (Mercosul format)"),
                ),
                (
                    "group",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="plates",
                        to="fleet.vehiclegroup",
                        verbose_name="group",
                    ),
                ),
            ],
            options={
                "verbose_name": "vehicle of a group",
                "verbose_name_plural": "vehicles of a group",
            },
        ),
        migrations.CreateModel(
            name="WebhookDelivery",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "received_at",
                    models.DateTimeField(
                        db_index=True, default=django.utils.timezone.now, verbose_name="received"
                    ),
                ),
                (
                    "content_type",
                    models.CharField(blank=True, max_length=255, verbose_name="content type"),
                ),
                ("body", models.BinaryField(blank=True, verbose_name="body")),
                ("body_size", models.PositiveIntegerField(verbose_name="body size (bytes)")),
                (
                    "body_sha256",
                    models.CharField(max_length=64, verbose_name="SHA-256 of the body"),
                ),
                ("headers", models.JSONField(blank=True, default=dict, verbose_name="headers")),
                (
                    "source_address",
                    models.GenericIPAddressField(
                        blank=True, null=True, verbose_name="source address"
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("received", "received, not processed yet"),
                            ("processed", "processed"),
                            ("duplicate", "duplicate of an earlier delivery"),
                            ("unknown_kind", "kept: unknown event kind"),
                            ("invalid", "kept: invalid"),
                            ("failed", "kept: processing failed"),
                            ("refused", "refused: too large"),
                        ],
                        default="received",
                        max_length=20,
                        verbose_name="status",
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("frame", "fine"),
                            ("notification", "notification"),
                            ("unknown", "unknown"),
                        ],
                        max_length=20,
                        verbose_name="event kind",
                    ),
                ),
                ("error", models.TextField(blank=True, verbose_name="error")),
                (
                    "attempts",
                    models.PositiveSmallIntegerField(default=0, verbose_name="processing attempts"),
                ),
                (
                    "processed_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="last processed"),
                ),
                (
                    "body_purged_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="body purged"),
                ),
                (
                    "unknown_keys_unrecorded",
                    models.PositiveIntegerField(
                        default=0,
                        help_text=(
                            "New unknown keys of this delivery beyond "
                            "FLEET_WEBHOOK_UNKNOWN_KEYS_MAX when it was last processed: counted "
                            "here, not listed one by one."
                        ),
                        verbose_name="unknown keys not recorded",
                    ),
                ),
                (
                    "duplicate_of",
                    models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="fleet.webhookdelivery",
                        verbose_name="duplicate of",
                    ),
                ),
                (
                    "fine",
                    models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="deliveries",
                        to="fleet.fine",
                        verbose_name="fine",
                    ),
                ),
                (
                    "notification",
                    models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="deliveries",
                        to="fleet.notification",
                        verbose_name="notification",
                    ),
                ),
            ],
            options={
                "verbose_name": "webhook delivery",
                "verbose_name_plural": "webhook deliveries",
                "ordering": ["-received_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="UnknownWebhookKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("path", models.CharField(max_length=200, unique=True, verbose_name="key")),
                (
                    "first_seen",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="first seen"
                    ),
                ),
                (
                    "sample",
                    models.CharField(blank=True, max_length=200, verbose_name="sample value"),
                ),
                (
                    "first_delivery",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="fleet.webhookdelivery",
                        verbose_name="first delivery",
                    ),
                ),
            ],
            options={
                "verbose_name": "unknown webhook key",
                "verbose_name_plural": "unknown webhook keys",
                "ordering": ["-first_seen", "path"],
            },
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
        migrations.AddIndex(
            model_name="cnhlookup",
            index=models.Index(fields=["owner", "-created_at"], name="fleet_cnh_owner_created"),
        ),
        migrations.AddIndex(
            model_name="cnhlookup",
            index=models.Index(fields=["created_at"], name="fleet_cnh_created"),
        ),
        migrations.AddConstraint(
            model_name="cnhlookupitem",
            constraint=models.UniqueConstraint(
                fields=("lookup", "position"), name="fleet_cnh_item_position"
            ),
        ),
        migrations.AddIndex(
            model_name="driverword",
            index=models.Index(fields=["word", "driver"], name="fleet_driver_word"),
        ),
        migrations.AddConstraint(
            model_name="driverword",
            constraint=models.UniqueConstraint(
                fields=("driver", "word"), name="fleet_driver_word_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="savedfineview",
            constraint=models.UniqueConstraint(
                fields=("user", "name"), name="fleet_saved_fine_view_name"
            ),
        ),
        migrations.AddIndex(
            model_name="grouptally",
            index=models.Index(
                fields=["group", "dimension", "-cents", "-count", "key"],
                name="fleet_group_tally_amount",
            ),
        ),
        migrations.AddIndex(
            model_name="grouptally",
            index=models.Index(
                fields=["group", "dimension", "-count", "key"], name="fleet_group_tally_count"
            ),
        ),
        migrations.AddConstraint(
            model_name="grouptally",
            constraint=models.UniqueConstraint(
                fields=("group", "dimension", "key"), name="fleet_group_tally_key"
            ),
        ),
        migrations.AddConstraint(
            model_name="directorygroup",
            constraint=models.UniqueConstraint(
                fields=("provider", "value", "group"), name="fleet_directory_group"
            ),
        ),
        migrations.AddConstraint(
            model_name="vehiclegroupmember",
            constraint=models.UniqueConstraint(
                fields=("user", "group", "provider"), name="fleet_vehicle_group_member"
            ),
        ),
        migrations.AddIndex(
            model_name="vehiclegroupplate",
            index=models.Index(fields=["registration", "group"], name="fleet_group_plate_reg"),
        ),
        migrations.AddConstraint(
            model_name="vehiclegroupplate",
            constraint=models.UniqueConstraint(
                fields=("group", "registration"), name="fleet_vehicle_group_plate"
            ),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(fields=["status", "received_at"], name="fleet_delivery_status"),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(fields=["body_sha256", "status"], name="fleet_delivery_body"),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(
                condition=models.Q(("duplicate_of__isnull", False)),
                fields=["duplicate_of"],
                name="fleet_delivery_duplicate_of",
            ),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(
                condition=models.Q(("fine__isnull", False)),
                fields=["fine"],
                name="fleet_delivery_fine",
            ),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(
                condition=models.Q(("notification__isnull", False)),
                fields=["notification"],
                name="fleet_delivery_notification",
            ),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(
                condition=models.Q(
                    ("body_purged_at__isnull", True), ("status__in", ("processed", "duplicate"))
                ),
                fields=["received_at"],
                name="fleet_delivery_body_kept",
            ),
        ),
        migrations.AddIndex(
            model_name="notification",
            index=models.Index(
                fields=["treated", "-updated_at", "registration"],
                include=("id",),
                name="fleet_notification_list_ids",
            ),
        ),
        migrations.AddIndex(
            model_name="notification",
            index=models.Index(
                condition=models.Q(("registration", ""), _negated=True),
                fields=["registration", "treated"],
                name="fleet_notification_plate",
            ),
        ),
        migrations.AddIndex(
            model_name="notification",
            index=models.Index(
                fields=["heading", "treated", "-updated_at"], name="fleet_notification_heading"
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                fields=["treated", "-updated_at", "registration"],
                include=("id",),
                name="fleet_fine_list_ids",
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("registration", ""), _negated=True),
                fields=["registration", "treated"],
                name="fleet_fine_plate",
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(fields=["treated", "amount"], name="fleet_fine_treated_amount"),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                fields=["treated", "registration", "amount"], name="fleet_fine_treated_plate"
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                fields=["treated", "driver_id", "amount"], name="fleet_fine_treated_driver"
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("driver_id__isnull", False)),
                fields=["driver_id", "treated"],
                name="fleet_fine_driver",
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(fields=["occurred_at", "amount"], name="fleet_fine_occurred"),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("driver_basis", ""), ("driver_id__isnull", True)),
                fields=["key"],
                name="fleet_fine_unattributed",
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("driver_basis", "uncertain")),
                fields=["treated", "-updated_at"],
                name="fleet_fine_uncertain",
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=fleet.schema.DescendingIndex(
                fields=["-occurred_at", "-id"], name="fleet_fine_occurred_desc"
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                fields=["treated", "occurred_at"], name="fleet_fine_treated_occurred"
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(fields=["amount", "id"], name="fleet_fine_amount"),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=fleet.schema.DescendingIndex(
                fields=["-amount", "-id"], name="fleet_fine_amount_desc"
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(fields=["received_at", "amount"], name="fleet_fine_received"),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("link_frame", "")),
                fields=["treated", "-updated_at"],
                name="fleet_fine_without_document",
            ),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(fields=["reference"], name="fleet_fine_reference"),
        ),
        migrations.AddIndex(
            model_name="fine",
            index=models.Index(
                fields=["infraction", "treated", "-updated_at"], name="fleet_fine_infraction"
            ),
        ),
    ]


def _whole_fleet_group(apps, schema_editor):
    """The "Whole fleet" group of users, with the permission (vehicle groups scope the
    others)."""
    content_type_model = apps.get_model("contenttypes", "ContentType")
    permission_model = apps.get_model("auth", "Permission")
    content_type, _ = content_type_model.objects.get_or_create(
        app_label="fleet", model="vehiclegroup"
    )
    permission, _ = permission_model.objects.get_or_create(
        content_type=content_type,
        codename="view_whole_fleet",
        defaults={"name": "Can see the whole fleet, vehicles in no group too"},
    )
    group, _ = apps.get_model("auth", "Group").objects.get_or_create(name="Whole fleet")
    group.permissions.add(permission)


def _first_version(apps, schema_editor):
    apps.get_model("fleet", "ScopeVersion").objects.get_or_create(pk=1)


Migration.operations += [
    migrations.RunPython(_whole_fleet_group, migrations.RunPython.noop),
    migrations.RunPython(_first_version, migrations.RunPython.noop),
]
