"""A fleet's worth of plates imports in a few queries per thousand, and its few bad lines are
found by number. How fast it imports is a benchmark's business; that it scales is this test's:
its number of queries, which no machine's speed changes."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.listing import plate
from fleet.models import VehicleGroup, VehicleGroupPlate

pytestmark = pytest.mark.django_db

PLATES = 50_000
GROUPS = 200
# An INSERT per thousand plates (two where SQLite takes fewer variables to a query), and
# ten for the whole import. A query per plate or per group would be thousands, or hundreds.
MOST_QUERIES = 10 + 2 * PLATES // 1000
# Where the invalid plates go: after these many valid plates (the header is line 1).
PLANTED_AFTER = [0, 7, 4_999, 10_000, 17_321, 25_000, 31_415, 40_404, 49_998, 50_000]


def big_csv(path: Path) -> list[int]:
    """Write the CSV; the line numbers of its invalid plates."""
    lines = ["plate,group"]
    planted: list[int] = []
    for number in range(PLATES + 1):
        if number in PLANTED_AFTER:
            lines.append(f"ZZ{len(planted)}-0000,Grupo {len(planted):03d}")
            planted.append(len(lines))
        if number < PLATES:
            lines.append(f"{plate(number)},Grupo {number % GROUPS:03d}")
    path.write_text("\n".join(lines) + "\n")
    return planted


def test_fifty_thousand_plates_in_two_hundred_groups_import_in_a_few_queries_per_thousand(
    tmp_path: Path,
):
    path = tmp_path / "fleet.csv"
    planted = big_csv(path)
    out = StringIO()

    with CaptureQueriesContext(connection) as queries:
        call_command("vehicle_groups", "import", str(path), stdout=out)

    print(f"\n{PLATES} plates into {GROUPS} groups imported in {len(queries)} queries")
    output = out.getvalue()
    assert len(queries) <= MOST_QUERIES
    assert f"Groups created: {GROUPS} " in output
    assert f"Plates added: {PLATES}\n" in output
    assert "Lines refused: 10\n" in output
    assert refused_lines(output) == planted
    assert VehicleGroupPlate.objects.count() == PLATES
    assert VehicleGroup.objects.get(name="Grupo 007").plates.count() == PLATES // GROUPS
    assert VehicleGroupPlate.objects.filter(registration="AAA0A00").exists()  # AAA-0000


def refused_lines(output: str) -> list[int]:
    """The numbers of the lines listed under "Lines refused:" (not of those listed under
    the plates not in the fleet's vehicle list, when there is one to read)."""
    lines = output.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("Lines refused:")) + 1
    listed = []
    for line in lines[start:]:
        if not line.startswith("  line "):
            break
        listed.append(int(line.split()[1].rstrip(":")))
    return listed
