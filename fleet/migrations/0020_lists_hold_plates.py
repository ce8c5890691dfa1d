"""The lists' indexes hold the plate after their order: a part of the fleet that walks
its list (a region holding many fines) checks each entry's plate from the index, not
from the record (a deep page of a region read a fine for each entry it skipped). Built
before the old ones are dropped, neither holding writers on PostgreSQL."""

from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking, RemoveIndexWithoutLocking


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0019_listed_without_document"),
    ]

    operations = [
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                fields=["treated", "-updated_at", "registration"], name="fleet_fine_list_plate"
            ),
        ),
        RemoveIndexWithoutLocking(model_name="fine", name="fleet_fine_list"),
        AddIndexWithoutLocking(
            model_name="notification",
            index=models.Index(
                fields=["treated", "-updated_at", "registration"],
                name="fleet_notification_list_plate",
            ),
        ),
        RemoveIndexWithoutLocking(model_name="notification", name="fleet_notification_list"),
    ]
