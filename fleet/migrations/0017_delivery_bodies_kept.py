"""When a processed delivery's body was emptied (`FLEET_WEBHOOK_BODIES_KEEP_DAYS`), and the
index the nightly purge reads, built without holding writers on PostgreSQL."""

from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0016_searched_columns"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookdelivery",
            name="body_purged_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="body purged"),
        ),
        AddIndexWithoutLocking(
            model_name="webhookdelivery",
            index=models.Index(
                condition=models.Q(
                    ("body_purged_at__isnull", True), ("status__in", ("processed", "duplicate"))
                ),
                fields=["received_at"],
                name="fleet_delivery_body_kept",
            ),
        ),
    ]
