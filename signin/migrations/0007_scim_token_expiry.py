"""SCIM tokens end (`expires_at`), and say where they were last used from. A token made
before this ends a year after the migration: nothing a provider uses stops that day."""

from datetime import timedelta

from django.db import migrations, models
from django.utils import timezone


def a_year_from_now(apps, schema_editor):
    token = apps.get_model("signin", "ScimToken")
    token.objects.filter(expires_at__isnull=True).update(
        expires_at=timezone.now() + timedelta(days=365)
    )


class Migration(migrations.Migration):
    dependencies = [
        ("signin", "0006_access_blocks"),
    ]

    operations = [
        migrations.AddField(
            model_name="scimtoken",
            name="expires_at",
            field=models.DateTimeField(null=True, verbose_name="expires"),
        ),
        migrations.RunPython(a_year_from_now, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="scimtoken",
            name="expires_at",
            field=models.DateTimeField(verbose_name="expires"),
        ),
        migrations.AddField(
            model_name="scimtoken",
            name="last_used_from",
            field=models.GenericIPAddressField(
                blank=True, null=True, verbose_name="last used from"
            ),
        ),
    ]
