"""The indexes of the fines list sorted by when committed or by amount, either way with
NULLs last (a deep page read from an index, not a sort of every fine), built without
holding writers on PostgreSQL."""

from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking, DescendingIndex


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0017_delivery_bodies_kept"),
    ]

    operations = [
        AddIndexWithoutLocking(
            model_name="fine",
            index=DescendingIndex(fields=["-occurred_at", "-id"], name="fleet_fine_occurred_desc"),
        ),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                fields=["treated", "occurred_at"], name="fleet_fine_treated_occurred"
            ),
        ),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(fields=["amount", "id"], name="fleet_fine_amount"),
        ),
        AddIndexWithoutLocking(
            model_name="fine",
            index=DescendingIndex(fields=["-amount", "-id"], name="fleet_fine_amount_desc"),
        ),
    ]
