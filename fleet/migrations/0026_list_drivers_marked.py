"""A fine given its driver by the vehicle list before the history existed says so
(`driver_basis` "list", as every writer now writes it), so that "" means "not attributed
yet" and nothing else; a correction made from such a fine says the same of what it
replaced. The index of the fines still to attribute then needs only that one condition.

Not atomic: at ten million fines the UPDATE walks the ids a range to a short transaction
(the primary key finds each range: no scan holds the table), and on PostgreSQL the index
is rebuilt without holding writers (`fleet.schema`)."""

from django.db import migrations, models, transaction

from fleet.schema import AddIndexWithoutLocking, RemoveIndexWithoutLocking

# Ids one transaction covers.
CHUNK = 10_000


def list_basis_fill(apps, schema_editor):
    fine = apps.get_model("fleet", "Fine")
    given_by_list = fine.objects.filter(driver_basis="", driver_id__isnull=False)
    ids = fine.objects.aggregate(first=models.Min("pk"), last=models.Max("pk"))
    if ids["first"] is not None:
        for start in range(ids["first"], ids["last"] + 1, CHUNK):
            with transaction.atomic():
                given_by_list.filter(pk__gte=start, pk__lt=start + CHUNK).update(
                    driver_basis="list"
                )
    # A few rows, each a person's choice.
    correction = apps.get_model("fleet", "FineDriverCorrection")
    correction.objects.filter(from_basis="", from_driver_id__isnull=False).update(from_basis="list")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0001_squashed_0025_who_was_driving"),
    ]

    operations = [
        migrations.RunPython(list_basis_fill, migrations.RunPython.noop, elidable=True),
        RemoveIndexWithoutLocking(model_name="fine", name="fleet_fine_unattributed"),
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                condition=models.Q(driver_basis=""),
                fields=["key"],
                name="fleet_fine_unattributed",
            ),
        ),
    ]
