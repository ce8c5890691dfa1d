"""Sign-in's tables as they stand after its first 9 migrations, in one (`replaces`: a
database that has applied them all takes this one as applied; the README's "Upgrading").
Their data migrations filled columns of existing rows; a new database has none."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("signin", "0001_sso_attempts"),
        ("signin", "0002_sso_outcome_link_by_admin"),
        ("signin", "0003_scim_provisioning"),
        ("signin", "0004_scim_minutes"),
        ("signin", "0005_sessions_recorded"),
        ("signin", "0006_access_blocks"),
        ("signin", "0007_scim_token_expiry"),
        ("signin", "0008_scim_pushed_emails"),
        ("signin", "0009_scim_pushed_email_kind"),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ScimToken",
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
                        db_index=True, max_length=200, verbose_name="identity provider"
                    ),
                ),
                (
                    "prefix",
                    models.CharField(
                        editable=False, max_length=16, unique=True, verbose_name="prefix"
                    ),
                ),
                (
                    "digest",
                    models.CharField(
                        editable=False, max_length=64, verbose_name="SHA-256 of the token"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                (
                    "created_by",
                    models.CharField(blank=True, max_length=150, verbose_name="created by"),
                ),
                ("revoked_at", models.DateTimeField(blank=True, null=True, verbose_name="revoked")),
                ("expires_at", models.DateTimeField(verbose_name="expires")),
                (
                    "last_used_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="last used"),
                ),
                (
                    "last_used_from",
                    models.GenericIPAddressField(
                        blank=True, null=True, verbose_name="last used from"
                    ),
                ),
            ],
            options={
                "verbose_name": "SCIM token",
                "verbose_name_plural": "SCIM tokens",
                "ordering": ["provider", "-created_at"],
            },
        ),
        migrations.CreateModel(
            name="AccessBlock",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("since", models.DateTimeField(auto_now_add=True, verbose_name="blocked since")),
                ("by", models.CharField(max_length=200, verbose_name="blocked by")),
                ("reason", models.CharField(blank=True, max_length=200, verbose_name="why")),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="access_block",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="portal user",
                    ),
                ),
            ],
            options={
                "verbose_name": "access blocked",
                "verbose_name_plural": "accesses blocked",
                "ordering": ["-since"],
            },
        ),
        migrations.CreateModel(
            name="ScimMinute",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("who", models.CharField(max_length=60, verbose_name="token or address")),
                ("minute", models.DateTimeField(verbose_name="minute")),
                ("count", models.PositiveIntegerField(default=0, verbose_name="requests")),
                (
                    "limited",
                    models.BooleanField(
                        default=False,
                        help_text="More than SCIM_REQUESTS_PER_MINUTE: the rest were answered 429.",
                        verbose_name="limited",
                    ),
                ),
            ],
            options={
                "verbose_name": "SCIM requests in a minute",
                "verbose_name_plural": "SCIM requests by minute",
                "ordering": ["-minute", "who"],
                "indexes": [models.Index(fields=["minute"], name="signin_scim_minute_when")],
                "constraints": [
                    models.UniqueConstraint(fields=("who", "minute"), name="signin_scim_minute")
                ],
            },
        ),
        migrations.CreateModel(
            name="ScimCall",
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
                    "provider",
                    models.CharField(blank=True, max_length=200, verbose_name="identity provider"),
                ),
                ("method", models.CharField(max_length=10, verbose_name="method")),
                ("path", models.CharField(max_length=300, verbose_name="path")),
                (
                    "resource_id",
                    models.CharField(blank=True, max_length=100, verbose_name="resource id"),
                ),
                ("status", models.PositiveSmallIntegerField(verbose_name="status")),
                ("detail", models.CharField(blank=True, max_length=300, verbose_name="detail")),
                (
                    "address",
                    models.GenericIPAddressField(blank=True, null=True, verbose_name="address"),
                ),
                (
                    "token",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="calls",
                        to="signin.scimtoken",
                        verbose_name="token",
                    ),
                ),
            ],
            options={
                "verbose_name": "SCIM call",
                "verbose_name_plural": "SCIM calls",
                "ordering": ["-created_at"],
            },
        ),
        migrations.CreateModel(
            name="ScimUser",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("provider", models.CharField(max_length=200, verbose_name="identity provider")),
                ("user_name", models.CharField(max_length=255, verbose_name="userName")),
                (
                    "external_id",
                    models.CharField(blank=True, max_length=255, verbose_name="externalId"),
                ),
                (
                    "active",
                    models.BooleanField(
                        default=True, null=True, verbose_name="active at the provider"
                    ),
                ),
                (
                    "email",
                    models.EmailField(blank=True, max_length=254, verbose_name="e-mail pushed"),
                ),
                (
                    "email_type",
                    models.CharField(
                        blank=True, max_length=20, verbose_name="type of the e-mail pushed"
                    ),
                ),
                (
                    "email_primary",
                    models.BooleanField(
                        blank=True, null=True, verbose_name="e-mail pushed is primary"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="last modified")),
                (
                    "deleted_at",
                    models.DateTimeField(
                        blank=True, null=True, verbose_name="deleted by the provider"
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="scim_identities",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="portal user",
                    ),
                ),
            ],
            options={
                "verbose_name": "provisioned user",
                "verbose_name_plural": "provisioned users",
                "ordering": ["provider", "user_name"],
            },
        ),
        migrations.CreateModel(
            name="ScimGroup",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("provider", models.CharField(max_length=200, verbose_name="identity provider")),
                ("display_name", models.CharField(max_length=255, verbose_name="displayName")),
                (
                    "external_id",
                    models.CharField(blank=True, max_length=255, verbose_name="externalId"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="last modified")),
                (
                    "members",
                    models.ManyToManyField(
                        blank=True,
                        related_name="groups",
                        to="signin.scimuser",
                        verbose_name="members",
                    ),
                ),
            ],
            options={
                "verbose_name": "provisioned group",
                "verbose_name_plural": "provisioned groups",
                "ordering": ["provider", "display_name"],
            },
        ),
        migrations.CreateModel(
            name="SsoAttempt",
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
                ("provider", models.CharField(max_length=200, verbose_name="provider")),
                (
                    "subject",
                    models.CharField(
                        blank=True, max_length=255, verbose_name="subject at the provider"
                    ),
                ),
                ("email", models.CharField(blank=True, max_length=254, verbose_name="e-mail")),
                (
                    "address",
                    models.GenericIPAddressField(blank=True, null=True, verbose_name="address"),
                ),
                (
                    "outcome",
                    models.CharField(
                        choices=[
                            ("signed_in", "signed in"),
                            ("provisioned", "signed in for the first time: account created"),
                            (
                                "linked",
                                "signed in: linked to the existing account with this e-mail",
                            ),
                            ("unverified_email", "refused: e-mail not verified by the provider"),
                            ("domain_not_allowed", "refused: e-mail domain not allowed"),
                            ("no_role", "refused: in no group that gives access"),
                            ("deactivated", "refused: portal account deactivated"),
                            ("conflict", "refused: e-mail already linked to another identity"),
                            (
                                "link_by_admin",
                                "refused: an administrator must link the account with this e-mail",
                            ),
                            ("bad_answer", "refused: the provider's answer did not check out"),
                            ("cancelled", "cancelled at the provider"),
                            ("unavailable", "provider unavailable"),
                        ],
                        max_length=30,
                        verbose_name="outcome",
                    ),
                ),
                (
                    "role",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("manager", "fleet manager"),
                            ("administrator", "administrator (Django admin)"),
                        ],
                        max_length=30,
                        verbose_name="role",
                    ),
                ),
                ("detail", models.CharField(blank=True, max_length=300, verbose_name="detail")),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="portal user",
                    ),
                ),
            ],
            options={
                "verbose_name": "single sign-on attempt",
                "verbose_name_plural": "single sign-on attempts",
                "ordering": ["-created_at"],
            },
        ),
        migrations.AddConstraint(
            model_name="scimuser",
            constraint=models.UniqueConstraint(
                condition=models.Q(("deleted_at__isnull", True)),
                fields=("provider", "user_name"),
                name="signin_scim_user_name",
            ),
        ),
        migrations.AddConstraint(
            model_name="scimuser",
            constraint=models.UniqueConstraint(
                condition=models.Q(("deleted_at__isnull", True)),
                fields=("provider", "user"),
                name="signin_scim_user",
            ),
        ),
        migrations.AddConstraint(
            model_name="scimgroup",
            constraint=models.UniqueConstraint(
                fields=("provider", "display_name"), name="signin_scim_group_name"
            ),
        ),
    ]
