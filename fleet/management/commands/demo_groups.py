"""`manage.py demo_groups`: vehicle groups for the demo, so that a regional manager can be
tried out.

The emulator's vehicles, read from it through the portal's own client in plate order,
go to three regions (São Paulo, Rio de Janeiro, Minas Gerais); a tenth stay in no group,
as new vehicles do before an administrator places them. The demo `regional` manager is
given São Paulo by hand; the demo identity provider's groups `fleet-sp` and `fleet-rj`
are mapped to São Paulo and Rio de Janeiro. A group that exists is left as it is (an
administrator's changes stay). `make run` runs it once the emulator answers (`run_dev`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet import plates
from fleet.models import DirectoryGroup, VehicleGroup, VehicleGroupMember, VehicleGroupPlate
from fleet.services.scopes import vehicle_groups_changed
from fleet.services.vehicles import FleetDataUnavailable, vehicle_export, vehicles_ungrouped

# Each region's share of the fleet, in plate order; what is left is in no group.
REGIONS = (("São Paulo", 0.45, "fleet-sp"), ("Rio de Janeiro", 0.30, "fleet-rj"))
REGIONS_UNMAPPED = (("Minas Gerais", 0.15),)
DEMO_PROVIDER = "demo"  # run_dev's OIDC_PROVIDER_ID for the demo identity provider
REGIONAL_USER = "regional"


class Command(BaseCommand):
    help = "Create the demo's vehicle groups from the emulator's vehicles (emulator only)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Run even when FLEET_ENVIRONMENT is not 'emulator'.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.FLEET_ENVIRONMENT != "emulator" and not options["force"]:
            raise CommandError("demo groups are for the emulator (use --force if you mean it)")
        try:
            rows, _freshness = vehicle_export()
            listed = sorted(plates.registration(row.plate) for row in rows)
        except FleetDataUnavailable as exc:
            raise CommandError(f"the vehicle list could not be read: {exc}") from exc
        start = 0
        shares = [(name, share, value) for name, share, value in REGIONS]
        shares += [(name, share, "") for name, share in REGIONS_UNMAPPED]
        for name, share, value in shares:
            end = start + round(len(listed) * share)
            group, created = VehicleGroup.objects.get_or_create(name=name)
            if created:
                VehicleGroupPlate.objects.bulk_create(
                    [VehicleGroupPlate(group=group, registration=r) for r in listed[start:end]],
                    ignore_conflicts=True,
                )
                vehicle_groups_changed([group.pk])
            if value:
                DirectoryGroup.objects.get_or_create(
                    provider=DEMO_PROVIDER, value=value, group=group
                )
            count = group.plates.count()
            what = "created" if created else "kept as it was"
            self.stdout.write(f"  vehicle group {name}: {count} vehicles ({what})")
            start = end
        regional = get_user_model().objects.filter(username=REGIONAL_USER).first()
        if regional is not None:
            group = VehicleGroup.objects.get(name=REGIONS[0][0])
            VehicleGroupMember.objects.get_or_create(group=group, user=regional, provider="")
        self.stdout.write(f"  {vehicles_ungrouped()} vehicles in no group")
