"""Missed is no longer a stored state of `Fine.indication` but what the clock says of a
fine still to indicate whose deadline has passed (`Fine.indication_missed`). The fines
marked missed go back to "needed" (their deadline unchanged, so they show missed as
before; their tallies are by deadline, unchanged), and the queue's partial indexes are of
the fines still "needed" (`indication = 'needed'`: SQLite uses a partial index for a
query only when it can prove the query implies the index's condition, which it does for
one comparison with a bound value but never for a list of them): by deadline, and by
vehicle or by driver then deadline, each led by the condition's columns on SQLite
(`fleet.schema.ConditionLedIndex`: why). The new indexes are built before the update
and the old one dropped after, each without holding writers on PostgreSQL (hence not
atomic); the update goes `CHUNK` ids a statement, one walk of the table by its primary
key."""

# Written by hand on 2026-12-07

from typing import Any

from django.db import migrations, models

from fleet.schema import (
    AddIndexWithoutLocking,
    AlterChoices,
    ConditionLedIndex,
    RemoveIndexWithoutLocking,
)

# Fines' ids a statement (each its own transaction): writers of fines wait a moment at most.
CHUNK = 10_000


def missed_to_needed(apps: Any, schema_editor: Any) -> None:
    fine = apps.get_model("fleet", "Fine")
    ids = fine.objects.aggregate(first=models.Min("pk"), last=models.Max("pk"))
    if ids["first"] is None:
        return
    missed = fine.objects.filter(indication="missed")
    for start in range(ids["first"], ids["last"] + 1, CHUNK):
        missed.filter(pk__gte=start, pk__lt=start + CHUNK).update(indication="needed")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0033_indication_receipts"),
    ]

    operations = [
        *(
            AddIndexWithoutLocking(
                model_name="fine",
                index=ConditionLedIndex(
                    condition=models.Q(("indication", "needed"), ("treated", False)),
                    fields=[*columns, "indication_due", "id"],
                    leading=["indication", "treated"],
                    name=name,
                ),
            )
            for name, columns in (
                ("fleet_fine_to_indicate", []),
                ("fleet_fine_to_indicate_plate", ["registration"]),
                ("fleet_fine_to_indicate_driver", ["driver_id"]),
            )
        ),
        migrations.RunPython(missed_to_needed, migrations.RunPython.noop, elidable=True),
        RemoveIndexWithoutLocking(model_name="fine", name="fleet_fine_still_to_indicate"),
        AlterChoices(
            model_name="fine",
            name="indication",
            field=models.CharField(
                blank=True,
                choices=[
                    ("needed", "to indicate"),
                    ("not_needed", "no indication needed"),
                    ("indicated", "indicated, awaiting the authority"),
                    ("accepted", "indication accepted"),
                ],
                max_length=12,
                null=True,
                verbose_name="driver indication",
            ),
        ),
    ]
