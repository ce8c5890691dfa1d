"""Each vehicle group's own tallies (`GroupTally`): written with the fleet's by every
writer of fines, counted again by the worker when the group's plates change, and read
by the group's dashboard only while they count its plates as they are; a region's
dashboard after a fine then reads a few rows, never its fines."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet import plates
from fleet.models import Fine, GroupTally, VehicleGroup, VehicleGroupMember
from fleet.services import dashboard
from fleet.services.figures import FineFigures
from fleet.services.scopes import VehicleScope, scope_of, scopes_changed
from fleet.services.tallies import (
    fine_tallies_counted,
    group_tallies_catch_up,
    group_tallies_current,
    group_tallies_differences,
)
from fleet.services.vehicle_groups import vehicle_group_plates_remove, vehicle_groups_import
from tests.conftest import run_tasks
from tests.services.test_fine_tallies import deliver, fleet, frame, store
from tests.services.test_fine_tallies_rebuild import written_while_counting

__all__ = ["fleet"]  # the fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
    pytest.mark.scoped,
    pytest.mark.usefixtures("held_clock"),
]

ENGLISH = {"Accept-Language": "en"}


def counted(group: VehicleGroup) -> dict[tuple[str, str], tuple[int, int]]:
    """The group's tallies as its vehicles' fines sum up, from scratch."""
    registrations = group.plates.values("registration")
    return fine_tallies_counted(Fine.objects.filter(registration__in=registrations))


def stored(group: VehicleGroup) -> dict[tuple[str, str], tuple[int, int]]:
    return {
        (tally.dimension, tally.key): (tally.count, tally.cents)
        for tally in GroupTally.objects.filter(group=group)
        if tally.count or tally.cents
    }


def region(name: str, vehicles: list[dict[str, Any]]) -> VehicleGroup:
    """A group of these vehicles, made as the admin makes one, its tallies counted."""
    group = VehicleGroup.objects.create(name=name)
    vehicle_groups_import([v["car_plate"] for v in vehicles], group=group)
    run_tasks()  # the worker counts its tallies (`group_tallies_catch_up`)
    return group


def figures_apart(group: VehicleGroup) -> FineFigures:
    """The group's figures summed from its fines, as a part of several groups has them."""
    scope = VehicleScope(whole_fleet=False, group_ids=(group.pk,), key=f"apart:{group.pk}")
    return dashboard._computed(timezone.localdate(), "apart", scope)


def same_figures(one: FineFigures, other: FineFigures) -> bool:
    fields = ("untreated", "months", "top_vehicles", "top_drivers", "recent", "most_fined")
    return all(getattr(one, name) == getattr(other, name) for name in fields) and (
        one.without_document == other.without_document
    )


def test_a_groups_tallies_follow_every_write_of_its_vehicles_fines(client, fleet):
    """Fines of the group's vehicles and of others, treated, moved to another vehicle,
    their document come: the group's tallies are at each step what its fines sum up to,
    and another group holding one of the same vehicles counts it too."""
    north = region("North", fleet[:2])
    south = region("South", fleet[1:3])
    assert group_tallies_current(north.pk)
    assert group_tallies_current(south.pk)
    first, second, third, outside = (v["car_plate"] for v in fleet[:4])

    deliver(
        client,
        frame(1, plate=first, amount="100.00"),
        frame(2, plate=second, amount="20.50", months_ago=2),
        frame(3, plate=third, amount="7.00"),
        frame(4, plate=outside, amount="1000.00"),
    )
    assert stored(north) == counted(north) != {}
    assert stored(south) == counted(south) != {}
    assert stored(north)["untreated", ""] == (2, 12050)

    deliver(
        client,
        frame(1, plate=first, amount="100.00", treated=True, updated=10),
        frame(2, plate=outside, amount="20.50", months_ago=2, updated=10),  # another vehicle
        frame(3, plate=third, amount="7.00", document="https://detran.example/3.pdf", updated=10),
    )
    for group in (north, south):
        assert stored(group) == counted(group)
    assert ("untreated", "") not in stored(north)  # fine 1 treated, fine 2 moved out
    assert group_tallies_differences() == {}
    # The dashboard of a manager of the group reads its tallies: the same figures as
    # summed from its fines.
    assert same_figures(dashboard.fine_figures(scope=scope_of_group(north)), figures_apart(north))


def scope_of_group(group: VehicleGroup) -> VehicleScope:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(f"manager-{group.pk}")
    VehicleGroupMember.objects.create(group=group, user=user)
    scopes_changed()  # as the admin counts a change of who sees what
    return scope_of(user)


def test_a_change_of_plates_is_counted_by_the_worker_and_read_only_then(client, fleet):
    """Plates added or taken out: the group's tallies are not read (its dashboard sums
    its fines) until the worker counted them again; then they are exact, and its
    dashboard after a fine reads tallies, not fines."""
    group = region("Centre", fleet[:1])
    deliver(
        client,
        frame(1, plate=fleet[0]["car_plate"], amount="10.00"),
        frame(2, plate=fleet[1]["car_plate"], amount="30.00"),
    )
    vehicle_groups_import([fleet[1]["car_plate"]], group=group)
    assert not group_tallies_current(group.pk)
    assert stored(group) != counted(group)  # the added vehicle's fine is not in them yet
    scope = scope_of_group(group)
    assert dashboard.fine_figures(scope=scope).untreated.count == 2  # summed from its fines

    assert run_tasks() >= 1
    assert group_tallies_current(group.pk)
    assert stored(group) == counted(group)
    assert dashboard.fine_figures(scope=scope).untreated.count == 2

    vehicle_group_plates_remove(
        group=group, registrations=[plates.registration(fleet[0]["car_plate"])]
    )
    assert not group_tallies_current(group.pk)
    run_tasks()
    assert stored(group) == counted(group)
    assert stored(group)["untreated", ""] == (1, 3000)

    # A fine came: the group's dashboard reads its tallies, a few rows, not its fines.
    deliver(client, frame(3, plate=fleet[1]["car_plate"], amount="5.00"))
    with CaptureQueriesContext(connection) as queries:
        figures = dashboard.fine_figures(scope=scope_of(scope_user(group)))
    assert figures.untreated.count == 2
    summing = [
        q["sql"] for q in queries if re.search(r"(COUNT|SUM)\(.*FROM \"fleet_fine\"", q["sql"])
    ]
    assert summing == [], summing


def scope_user(group: VehicleGroup) -> Any:
    return VehicleGroupMember.objects.filter(group=group).first().user


def test_a_fine_written_while_a_group_is_counted_waits_for_nothing_and_is_counted(client, fleet):
    """The worker counts a group in a snapshot and corrects its tallies after: a fine
    processed meanwhile is not held, and counted once."""
    group = VehicleGroup.objects.create(name="West")
    vehicle_groups_import([v["car_plate"] for v in fleet[:2]], group=group)
    deliver(client, frame(1, plate=fleet[0]["car_plate"], amount="40.00"))
    store(client, frame(2, plate=fleet[1]["car_plate"], amount="2.00"))  # not processed yet
    assert written_while_counting(group_tallies_catch_up) == 1
    assert group_tallies_current(group.pk)
    assert stored(group) == counted(group)
    assert stored(group)["untreated", ""] == (2, 4200)


def test_the_command_checks_rebuilds_and_catches_up_the_groups(client, fleet):
    """`fine_tallies` lists a group's tally that is off; `--rebuild` counts every group's
    tallies again (a bulk load of fines past the ORM); `--groups` those whose plates
    changed, as the worker would."""
    group = region("East", fleet[:2])
    deliver(client, frame(1, plate=fleet[0]["car_plate"], amount="9.99"))
    Fine.objects.filter(external_id="1").update(amount="1.00")  # past the tallies
    # Every tally fine 1 counts in is off by its amount, the fleet's and the group's.
    assert set(group_tallies_differences()) == {(group.pk, *tally) for tally in counted(group)}
    output = io.StringIO()
    with pytest.raises(CommandError, match="tallies differ"):
        call_command("fine_tallies", stdout=output)
    assert f"untreated (vehicle group {group.pk}) -: stored 1 fines, 999 cents" in output.getvalue()

    call_command("fine_tallies", "--rebuild", stdout=output)
    call_command("fine_tallies", stdout=output)
    assert stored(group) == counted(group)

    VehicleGroup.objects.filter(pk=group.pk).update(tallied_revision=None)  # as migrated
    call_command("fine_tallies", "--groups", stdout=output)
    assert "Counted the tallies of 1 groups." in output.getvalue()
    assert group_tallies_current(group.pk)


def test_a_regions_dashboard_after_a_fine_is_read_from_its_tallies(
    client, django_user_model, fleet
):
    """Through the page: a region's manager sees a new fine at once, and the page read no
    sum of fines (the region's tallies are current)."""
    group = region("Pampa", fleet[:3])
    user = django_user_model.objects.create_user("pampa")
    VehicleGroupMember.objects.create(group=group, user=user)
    scopes_changed()
    client.force_login(user)
    deliver(Client(), frame(1, plate=fleet[0]["car_plate"], amount="12.34"))
    client.get("/", headers=ENGLISH)

    deliver(Client(), frame(2, plate=fleet[1]["car_plate"], amount="0.66"))
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/", headers=ENGLISH).text

    amount = re.search(r'data-testid="untreated-amount">R\$&nbsp;([^<]*)<', page)
    assert amount
    assert amount[1] == "13.00"
    assert not [q for q in queries if 'FROM "fleet_fine"' in q["sql"] and "SUM(" in q["sql"]]
