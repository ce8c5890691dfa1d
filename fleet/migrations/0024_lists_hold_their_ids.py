"""The lists' indexes hold the id beside their keys (PostgreSQL's INCLUDE): a page deep in
a list, and a part of the fleet's walk of it, read the index alone, where PostgreSQL
read a row of the table for each entry (at ten million fines, a region's 200th page
walked 31,000 entries: 250 ms, 98 ms from the index alone). The keys are 0023's: the
order the lists sort by, then the plate; SQLite's indexes hold the row's id already, so
there the index is the one it was, under its new name. Built before the old is
dropped, neither holding writers on PostgreSQL."""

from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking, RemoveIndexWithoutLocking


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0023_lists_without_their_ids"),
    ]

    operations = [
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                fields=["treated", "-updated_at", "registration"],
                include=["id"],
                name="fleet_fine_list_ids",
            ),
        ),
        RemoveIndexWithoutLocking(model_name="fine", name="fleet_fine_list_plate"),
        AddIndexWithoutLocking(
            model_name="notification",
            index=models.Index(
                fields=["treated", "-updated_at", "registration"],
                include=["id"],
                name="fleet_notification_list_ids",
            ),
        ),
        RemoveIndexWithoutLocking(model_name="notification", name="fleet_notification_list_plate"),
    ]
