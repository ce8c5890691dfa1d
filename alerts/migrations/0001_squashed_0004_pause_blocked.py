"""The alerts' tables as they stand after their first 4 migrations, in one (`replaces`:
a database that has applied them all takes this one as applied; the README's
"Upgrading")."""

import uuid

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import alerts.models


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("alerts", "0001_alerts_outbox_preferences_subscriptions"),
        ("alerts", "0002_alert_pause"),
        ("alerts", "0003_pause_reason_deprovisioned"),
        ("alerts", "0004_pause_blocked"),
    ]

    dependencies = [
        ("fleet", "0001_squashed_0025_who_was_driving"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AlertDefaults",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("new_fine", models.BooleanField(default=True, verbose_name="new fines")),
                (
                    "fine_document",
                    models.BooleanField(default=True, verbose_name="official documents available"),
                ),
                (
                    "fine_treated",
                    models.BooleanField(default=False, verbose_name="fines marked treated"),
                ),
                (
                    "new_notification",
                    models.BooleanField(default=True, verbose_name="new notifications"),
                ),
                (
                    "delivery",
                    models.CharField(
                        choices=[
                            ("immediate", "Immediately, one e-mail per event"),
                            ("digest", "A daily digest"),
                            ("off", "No e-mail"),
                        ],
                        default="digest",
                        max_length=10,
                        verbose_name="e-mail delivery",
                    ),
                ),
                (
                    "digest_hour",
                    models.PositiveSmallIntegerField(
                        default=8,
                        validators=[django.core.validators.MaxValueValidator(23)],
                        verbose_name="hour of the daily digest",
                    ),
                ),
                (
                    "time_zone",
                    models.CharField(
                        default="America/Sao_Paulo",
                        max_length=64,
                        validators=[alerts.models.validate_time_zone],
                        verbose_name="time zone of the digest",
                    ),
                ),
                ("all_vehicles", models.BooleanField(default=True, verbose_name="all vehicles")),
                (
                    "plates",
                    models.JSONField(
                        blank=True,
                        default=list,
                        validators=[alerts.models.validate_plates],
                        verbose_name="plates",
                    ),
                ),
                (
                    "language",
                    models.CharField(
                        choices=[("pt-br", "Portuguese (Brazil)"), ("en", "English")],
                        default="pt-br",
                        max_length=10,
                        verbose_name="language of the e-mails",
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated")),
            ],
            options={
                "verbose_name": "alert defaults",
                "verbose_name_plural": "alert defaults",
            },
        ),
        migrations.CreateModel(
            name="Alert",
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
                    "channel",
                    models.CharField(
                        choices=[("email", "e-mail"), ("webhook", "webhook")],
                        max_length=10,
                        verbose_name="channel",
                    ),
                ),
                (
                    "event",
                    models.CharField(
                        choices=[
                            ("new_fine", "A new fine"),
                            ("fine_document", "A fine's official document became available"),
                            ("fine_treated", "A fine was marked treated"),
                            ("new_notification", "A new notification"),
                        ],
                        max_length=20,
                        verbose_name="alert event",
                    ),
                ),
                ("event_key", models.CharField(max_length=60, verbose_name="event key")),
                ("data", models.JSONField(default=dict, verbose_name="event data")),
                (
                    "digest",
                    models.BooleanField(
                        default=False,
                        help_text="Sent with others in one e-mail (daily digest, or over the cap).",
                        verbose_name="in a digest",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Waiting"),
                            ("sending", "Being sent"),
                            ("sent", "Sent"),
                            ("failed", "Failed"),
                            ("cancelled", "Cancelled"),
                        ],
                        default="pending",
                        max_length=10,
                        verbose_name="status",
                    ),
                ),
                (
                    "due_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="due at"),
                ),
                ("attempts", models.PositiveSmallIntegerField(default=0, verbose_name="attempts")),
                (
                    "claim",
                    models.UUIDField(
                        blank=True, editable=False, null=True, verbose_name="claimed by"
                    ),
                ),
                (
                    "lease_until",
                    models.DateTimeField(blank=True, null=True, verbose_name="claimed until"),
                ),
                ("last_error", models.TextField(blank=True, verbose_name="last error")),
                (
                    "message_id",
                    models.CharField(blank=True, max_length=200, verbose_name="message id"),
                ),
                (
                    "created_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="created"),
                ),
                ("sent_at", models.DateTimeField(blank=True, null=True, verbose_name="sent at")),
                (
                    "fine",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="fleet.fine",
                        verbose_name="fine",
                    ),
                ),
                (
                    "notification",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="fleet.notification",
                        verbose_name="notification",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="alerts",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "alert",
                "verbose_name_plural": "alerts",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="AlertPause",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "reason",
                    models.CharField(
                        choices=[
                            ("refused", "refused at sign-in"),
                            ("inactive", "not signed in for a long time"),
                            ("deprovisioned", "deactivated by the identity provider"),
                            ("blocked", "blocked by an administrator"),
                        ],
                        max_length=20,
                        verbose_name="reason",
                    ),
                ),
                (
                    "detail",
                    models.CharField(blank=True, max_length=200, verbose_name="why, in words"),
                ),
                (
                    "since",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="paused since"
                    ),
                ),
                (
                    "resumed_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="resumed at"),
                ),
                (
                    "resumed_by",
                    models.CharField(blank=True, max_length=200, verbose_name="resumed by"),
                ),
                (
                    "notice",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("", "none"),
                            ("pending", "to send"),
                            ("sending", "being sent"),
                            ("sent", "sent"),
                            ("failed", "failed"),
                        ],
                        max_length=10,
                        verbose_name="last e-mail",
                    ),
                ),
                (
                    "notice_attempts",
                    models.PositiveSmallIntegerField(
                        default=0, verbose_name="last e-mail's attempts"
                    ),
                ),
                (
                    "notice_error",
                    models.CharField(
                        blank=True, max_length=500, verbose_name="last e-mail's error"
                    ),
                ),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="alert_pause",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "paused alerts",
                "verbose_name_plural": "paused alerts",
                "ordering": ["-since"],
            },
        ),
        migrations.CreateModel(
            name="AlertPreferences",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("new_fine", models.BooleanField(default=True, verbose_name="new fines")),
                (
                    "fine_document",
                    models.BooleanField(default=True, verbose_name="official documents available"),
                ),
                (
                    "fine_treated",
                    models.BooleanField(default=False, verbose_name="fines marked treated"),
                ),
                (
                    "new_notification",
                    models.BooleanField(default=True, verbose_name="new notifications"),
                ),
                (
                    "delivery",
                    models.CharField(
                        choices=[
                            ("immediate", "Immediately, one e-mail per event"),
                            ("digest", "A daily digest"),
                            ("off", "No e-mail"),
                        ],
                        default="digest",
                        max_length=10,
                        verbose_name="e-mail delivery",
                    ),
                ),
                (
                    "digest_hour",
                    models.PositiveSmallIntegerField(
                        default=8,
                        validators=[django.core.validators.MaxValueValidator(23)],
                        verbose_name="hour of the daily digest",
                    ),
                ),
                (
                    "time_zone",
                    models.CharField(
                        default="America/Sao_Paulo",
                        max_length=64,
                        validators=[alerts.models.validate_time_zone],
                        verbose_name="time zone of the digest",
                    ),
                ),
                ("all_vehicles", models.BooleanField(default=True, verbose_name="all vehicles")),
                (
                    "plates",
                    models.JSONField(
                        blank=True,
                        default=list,
                        validators=[alerts.models.validate_plates],
                        verbose_name="plates",
                    ),
                ),
                (
                    "language",
                    models.CharField(
                        choices=[("pt-br", "Portuguese (Brazil)"), ("en", "English")],
                        default="pt-br",
                        max_length=10,
                        verbose_name="language of the e-mails",
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated")),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="alert_preferences",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "alert preferences",
                "verbose_name_plural": "alert preferences",
                "ordering": ["user__username"],
            },
        ),
        migrations.CreateModel(
            name="WebhookSubscription",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("url", models.URLField(max_length=500, verbose_name="webhook address")),
                (
                    "description",
                    models.CharField(blank=True, max_length=200, verbose_name="what it is for"),
                ),
                (
                    "secret_encrypted",
                    models.TextField(editable=False, verbose_name="secret (encrypted)"),
                ),
                ("active", models.BooleanField(default=True, verbose_name="active")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="alert_webhooks",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "webhook subscription",
                "verbose_name_plural": "webhook subscriptions",
                "ordering": ["user__username", "pk"],
            },
        ),
        migrations.CreateModel(
            name="WebhookAttempt",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "started_at",
                    models.DateTimeField(
                        db_index=True, default=django.utils.timezone.now, verbose_name="when"
                    ),
                ),
                (
                    "status_code",
                    models.PositiveSmallIntegerField(
                        blank=True, null=True, verbose_name="answer status"
                    ),
                ),
                ("ok", models.BooleanField(verbose_name="delivered")),
                ("error", models.CharField(blank=True, max_length=500, verbose_name="error")),
                (
                    "duration_ms",
                    models.PositiveIntegerField(null=True, verbose_name="duration (ms)"),
                ),
                (
                    "alert",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="attempts_log",
                        to="alerts.alert",
                        verbose_name="alert",
                    ),
                ),
                (
                    "subscription",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="attempts",
                        to="alerts.webhooksubscription",
                        verbose_name="webhook subscription",
                    ),
                ),
            ],
            options={
                "verbose_name": "webhook attempt",
                "verbose_name_plural": "webhook attempts",
                "ordering": ["-started_at", "-pk"],
            },
        ),
        migrations.AddField(
            model_name="alert",
            name="subscription",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="alerts",
                to="alerts.webhooksubscription",
                verbose_name="webhook subscription",
            ),
        ),
        migrations.AddIndex(
            model_name="alert",
            index=models.Index(
                condition=models.Q(("status", "pending")),
                fields=["channel", "due_at"],
                name="alerts_pending_due",
            ),
        ),
        migrations.AddIndex(
            model_name="alert",
            index=models.Index(
                condition=models.Q(("status", "sending")),
                fields=["lease_until"],
                name="alerts_sending_lease",
            ),
        ),
        migrations.AddIndex(
            model_name="alert",
            index=models.Index(
                condition=models.Q(("channel", "email"), ("status", "sent")),
                fields=["user", "sent_at"],
                name="alerts_user_sent",
            ),
        ),
        migrations.AddConstraint(
            model_name="alert",
            constraint=models.UniqueConstraint(
                condition=models.Q(("channel", "email")),
                fields=("user", "event_key"),
                name="alerts_once_per_user_event_email",
            ),
        ),
        migrations.AddConstraint(
            model_name="alert",
            constraint=models.UniqueConstraint(
                condition=models.Q(("channel", "webhook")),
                fields=("subscription", "event_key"),
                name="alerts_once_per_subscription_event",
            ),
        ),
        migrations.AddConstraint(
            model_name="alert",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("channel", "email"), ("subscription__isnull", True)),
                    models.Q(("channel", "webhook"), ("subscription__isnull", False)),
                    _connector="OR",
                ),
                name="alerts_webhook_has_subscription",
            ),
        ),
    ]
