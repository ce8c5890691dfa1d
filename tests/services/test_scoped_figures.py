"""A part of the fleet's dashboard reads its vehicles' own tallies (untreated, by vehicle)
and sums only the fines of the months and days it shows, and by driver: the same figures
as the whole fleet's tallies give when the part holds every fine, and none of a fine of
another vehicle."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from fleet.models import DriverBasis, Fine, VehicleGroup, VehicleGroupPlate
from fleet.services.dashboard import fine_figures
from fleet.services.scopes import WHOLE_FLEET, VehicleScope
from fleet.services.tallies import fine_tallies_rebuild

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("held_clock")]

REGION = ["AAA1A11", "BBB2B22", "CCC3C33"]


def region() -> VehicleScope:
    group = VehicleGroup.objects.create(name="Sudeste")
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=group, registration=registration) for registration in REGION
    )
    return VehicleScope(whole_fleet=False, group_ids=(group.pk,), key="test-sudeste")


def fines(registrations: list[str], *, first: int, count: int) -> None:
    """`count` fines of these vehicles in turn: a third treated, some without their
    document or a driver or an amount, committed over two years and received over
    forty days (so that some fall outside the months and days the dashboard shows)."""
    now = timezone.now()
    Fine.objects.bulk_create(
        Fine(
            key=f"id:{n}",
            external_id=str(n),
            payload={"carPlate": registrations[n % len(registrations)]},
            treated=n % 3 == 0,
            registration=registrations[n % len(registrations)],
            amount=Decimal(n % 50) + Decimal("0.25") if n % 11 else None,
            occurred_at=now - timedelta(days=n * 7 % 730) if n % 13 else None,
            received_at=now - timedelta(days=n % 40, hours=n % 24),
            updated_at=now,
            link_frame="" if n % 4 == 0 else f"https://example.com/{n}",
            driver_id=n % 6 + 1 if n % 5 else None,
            driver_basis=DriverBasis.LIST if n % 5 else DriverBasis.PENDING,
        )
        for n in range(first, first + count)
    )
    fine_tallies_rebuild()


def test_a_part_holding_every_fine_shows_the_whole_fleets_figures():
    scope = region()
    fines(REGION, first=0, count=300)

    whole = fine_figures(scope=WHOLE_FLEET)
    part = fine_figures(scope=scope)
    assert whole.untreated.count == 200
    assert part.untreated_notifications == 0  # the whole fleet's are counted at each poll
    assert replace(part, key="", untreated_notifications=None) == replace(whole, key="")


def test_a_fine_of_another_vehicle_changes_nothing_a_part_shows():
    scope = region()
    fines(REGION, first=0, count=300)
    before = fine_figures(scope=scope)

    fines(["ZZZ9Z99", "YYY8Y88"], first=1000, count=120)
    after = fine_figures(scope=scope)
    assert fine_figures(scope=WHOLE_FLEET).untreated.count == 280
    assert replace(after, key="") == replace(before, key="")
