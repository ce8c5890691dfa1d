"""The lists' indexes as 0020 made them again (their order, then the plate), 0021's undone:
with the whole order in the index, the id that breaks ties included, SQLite's planner
read a list through it for filters that select few fines (fines received since
tomorrow and untreated: every untreated fine walked) to spare sorting them. Built
before the others are dropped, neither holding writers on PostgreSQL."""

from django.db import migrations, models

from fleet.schema import AddIndexWithoutLocking, RemoveIndexWithoutLocking


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0022_group_tallies"),
    ]

    operations = [
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                fields=["treated", "-updated_at", "registration"], name="fleet_fine_list_plate"
            ),
        ),
        RemoveIndexWithoutLocking(model_name="fine", name="fleet_fine_listed"),
        AddIndexWithoutLocking(
            model_name="notification",
            index=models.Index(
                fields=["treated", "-updated_at", "registration"],
                name="fleet_notification_list_plate",
            ),
        ),
        RemoveIndexWithoutLocking(model_name="notification", name="fleet_notification_listed"),
    ]
