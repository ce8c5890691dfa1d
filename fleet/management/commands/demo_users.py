"""`manage.py demo_users`: the demo logins that `make run` prints."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.models import FleetAccount


@dataclasses.dataclass(frozen=True, slots=True)
class DemoUser:
    username: str
    password: str
    first_name: str
    last_name: str
    email: str
    is_staff: bool
    # The emulator's web-app user this portal user logs into the fleet app as.
    fleet_email: str | None = None
    # Sees the whole fleet (administrators do anyway); else the vehicle groups
    # `demo_groups` gives them.
    whole_fleet: bool = True

    @property
    def role(self) -> str:
        if self.is_staff:
            return "administrator"
        return "fleet manager" if self.whole_fleet else "regional manager"


# Public on purpose: they are printed by `make run` and listed in the README,
# and the command refuses to create them outside the emulator environment.
DEMO_USERS = (
    DemoUser("admin", "admin-demo-password", "Ana", "Administradora", "admin@example.com", True),
    DemoUser(
        "manager",
        "manager-demo-password",
        "Marcos",
        "Gestor",
        "manager@example.com",
        False,
        fleet_email="manager@example.com",
    ),
    DemoUser(
        "regional",
        "regional-demo-password",
        "Regina",
        "Paulista",
        "regional@example.com",
        False,
        fleet_email="manager@example.com",
        whole_fleet=False,
    ),
)
# The emulator's web-app password (emulator/README.md), public like the above.
EMULATOR_WEB_PASSWORD = "demo-password"  # noqa: S105 (public demo value)


class Command(BaseCommand):
    help = "Create (or reset) the demo administrator and fleet manager, for the emulator."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Create them even when FLEET_ENVIRONMENT is not 'emulator'.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.FLEET_ENVIRONMENT != "emulator" and not options["force"]:
            raise CommandError(
                "demo users have public passwords: they are only created for the emulator "
                "(use --force if you really mean it)"
            )
        for demo in DEMO_USERS:
            user, _ = get_user_model().objects.update_or_create(
                username=demo.username,
                defaults={
                    "first_name": demo.first_name,
                    "last_name": demo.last_name,
                    "email": demo.email,
                    "is_staff": demo.is_staff,
                    "is_superuser": demo.is_staff,
                },
            )
            user.set_password(demo.password)
            user.save()
            whole_fleet = Permission.objects.get(
                content_type__app_label="fleet", codename="view_whole_fleet"
            )
            # Managers set who was driving when the history cannot tell, and the deadlines
            # the paper notice gives (the fine page).
            user.user_permissions.add(
                *Permission.objects.filter(
                    content_type__app_label="fleet",
                    codename__in=["change_fine_driver", "change_fine_indication"],
                )
            )
            if demo.whole_fleet:
                user.user_permissions.add(whole_fleet)
            else:
                user.user_permissions.remove(whole_fleet)
                user.groups.clear()
            if demo.fleet_email:
                account = FleetAccount.objects.filter(user=user).first() or FleetAccount(user=user)
                account.email = demo.fleet_email
                account.set_password(EMULATOR_WEB_PASSWORD)
                account.save()
            self.stdout.write(f"  {demo.role:<17} {demo.username} / {demo.password}")
