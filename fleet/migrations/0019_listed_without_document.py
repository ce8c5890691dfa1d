"""The index of the fines without their document in the list's order (it counted them
only, and the list sorted them all), built before the old one is dropped, neither
holding writers on PostgreSQL."""

from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking, RemoveIndexWithoutLocking


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0018_sorted_lists"),
    ]

    operations = [
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                condition=models.Q(("link_frame", "")),
                fields=["treated", "-updated_at"],
                name="fleet_fine_without_document",
            ),
        ),
        RemoveIndexWithoutLocking(model_name="fine", name="fleet_fine_no_document"),
    ]
