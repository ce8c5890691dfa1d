"""How each fine's driver is known, apart on every surface.

- The fines list filters by it (`?basis=`): one index of the fines by how their driver
  is known, in the list's order with the plate a part of the fleet checks
  (`fleet_fine_basis`), which also serves the "uncertain" filter: its partial index
  goes. Each built or dropped without holding writers on PostgreSQL (hence not atomic).
- The dashboard ranks only drivers the history or a person established: the tallies by
  driver lose the untreated fines whose driver is the vehicle list's guess, which are
  counted apart with the uncertain ones (`TallyDimension.GUESSED`, keyed by how). Read
  first, outside any transaction (the untreated fines of each guess, through the new
  index), then written as corrections added to the rows, as every writer adds to them,
  a chunk of drivers to a short transaction; each vehicle group's are counted again by
  the worker. A fine
  written meanwhile by a process of the previous release may leave a tally a fine off:
  `manage.py fine_tallies` says so and `--rebuild` mends it without stopping writers.
  Reverse: the guesses go back to their drivers' tallies.
"""

# Written by hand on 2026-12-07

from decimal import Decimal
from typing import Any

from django.db import migrations, models, transaction

from fleet.schema import AddIndexWithoutLocking, AlterChoices, RemoveIndexWithoutLocking

# Drivers' tallies corrected in one transaction.
CHUNK = 500

DIMENSIONS = [
    ("untreated", "untreated fines"),
    ("month", "fines by month committed"),
    ("vehicle", "untreated fines by vehicle"),
    ("driver", "untreated fines by driver, where established"),
    ("driver_guess", "untreated fines whose driver is a guess"),
    ("day", "fines by day received"),
    ("no_document", "fines without their document"),
    ("to_indicate", "untreated fines to indicate by deadline"),
    ("version", "changes of the tallies"),
]


def _cents(amount: Any) -> int:
    return int(Decimal(amount or 0).scaleb(2).to_integral_value())


def _guesses(fine: Any) -> tuple[list[tuple[int, int, int]], dict[str, tuple[int, int]]]:
    """The untreated fines whose driver is the vehicle list's, by driver (count, cents),
    and each guess's total (the list's naming a driver, and the uncertain)."""
    untreated = fine.objects.filter(treated=False).order_by()
    sums = {"count": models.Count("pk"), "amount": models.Sum("amount")}
    listed = untreated.filter(driver_basis="list", driver_id__isnull=False)
    by_driver = [
        (driver_id, count, _cents(amount))
        for driver_id, count, amount in listed.values_list("driver_id").annotate(**sums)
    ]
    totals = {
        "list": (sum(count for _d, count, _c in by_driver), sum(c for _d, _n, c in by_driver)),
    }
    uncertain = untreated.filter(driver_basis="uncertain").aggregate(**sums)
    totals["uncertain"] = (uncertain["count"] or 0, _cents(uncertain["amount"]))
    return by_driver, totals


def _add(tally: Any, dimension: str, key: str, count: int, cents: int) -> None:
    if not count and not cents:
        return
    row, _created = tally.objects.get_or_create(dimension=dimension, key=key)
    tally.objects.filter(pk=row.pk).update(
        count=models.F("count") + count, cents=models.F("cents") + cents
    )


def _move(apps: Any, sign: int) -> None:
    fine = apps.get_model("fleet", "Fine")
    tally = apps.get_model("fleet", "FineTally")
    group = apps.get_model("fleet", "VehicleGroup")
    by_driver, totals = _guesses(fine)
    # A chunk of drivers to a short transaction (a large fleet's guesses name hundreds of
    # thousands): writers of fines wait a moment at most. The version first in each, as
    # every writer takes it: its lock orders the writes.
    for start in range(0, max(len(by_driver), 1), CHUNK):
        with transaction.atomic():
            _add(tally, "version", "", 1, 0)
            for driver_id, count, cents in by_driver[start : start + CHUNK]:
                _add(tally, "driver", f"{driver_id:020d}", -sign * count, -sign * cents)
    with transaction.atomic():
        _add(tally, "version", "", 1, 0)
        for key, (count, cents) in totals.items():
            _add(tally, "driver_guess", key, sign * count, sign * cents)
        group.objects.update(tallied_revision=None)


def guesses_apart(apps: Any, schema_editor: Any) -> None:
    _move(apps, 1)


def guesses_back(apps: Any, schema_editor: Any) -> None:
    _move(apps, -1)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("fleet", "0034_missed_by_the_clock"),
    ]

    operations = [
        AddIndexWithoutLocking(
            model_name="fine",
            index=models.Index(
                fields=["driver_basis", "treated", "-updated_at", "registration", "driver_id"],
                include=["id"],
                name="fleet_fine_basis",
            ),
        ),
        RemoveIndexWithoutLocking(model_name="fine", name="fleet_fine_uncertain"),
        migrations.RunPython(guesses_apart, guesses_back, elidable=True),
        *(
            AlterChoices(
                model_name=model,
                name="dimension",
                field=models.CharField(choices=DIMENSIONS, max_length=12, verbose_name="dimension"),
            )
            for model in ("finetally", "grouptally")
        ),
    ]
