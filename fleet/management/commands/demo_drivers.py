"""`manage.py demo_drivers`: names for the drivers of the emulator's vehicles, for the demo.

The vehicle list gives its drivers by id only (spec 2.2): an administrator names them
in the admin (*Drivers*). For a demo, every driver id of the emulator's vehicle list,
read from the running emulator through the portal's own client, gets a made-up
Brazilian name, the same one for an id every time; a driver who has a name keeps it.
`make run` runs it once the emulator answers (`run_dev`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.services.driver_history import history_driver_ids
from fleet.services.drivers import driver_names_add
from fleet.services.vehicles import FleetDataUnavailable, fleet_driver_ids

FIRST_NAMES = (
    "Adriana", "Alexandre", "Aline", "Amanda", "Ana", "Anderson", "Antônio", "Beatriz",
    "Bruna", "Bruno", "Camila", "Carlos", "Cláudia", "Cristiane", "Daniel", "Diego",
    "Edson", "Eduardo", "Fábio", "Felipe", "Fernanda", "Francisco", "Gabriel", "Gisele",
    "Gustavo", "Jéssica", "João", "Jorge", "José", "Juliana", "Larissa", "Leandro",
    "Letícia", "Luana", "Lucas", "Luciana", "Luiz", "Marcelo", "Márcio", "Marcos",
    "Maria", "Mariana", "Patrícia", "Paulo", "Pedro", "Rafael", "Raimundo", "Renata",
    "Ricardo", "Roberto", "Rodrigo", "Rosângela", "Sandra", "Sérgio", "Severino",
    "Simone", "Thiago", "Vanessa", "Vinícius", "Wellington",
)  # fmt: skip
SURNAMES = (
    "Almeida", "Alves", "Andrade", "Araújo", "Azevedo", "Barbosa", "Batista", "Borges",
    "Campos", "Cardoso", "Carvalho", "Castro", "Cavalcanti", "Correia", "Costa", "Dias",
    "Fernandes", "Ferreira", "Freitas", "Gomes", "Gonçalves", "Lima", "Lopes", "Machado",
    "Marques", "Martins", "Melo", "Mendes", "Monteiro", "Moreira", "Moura", "Nascimento",
    "Nunes", "Oliveira", "Pereira", "Pinto", "Ramos", "Reis", "Ribeiro", "Rocha",
    "Rodrigues", "Santana", "Santos", "Silva", "Soares", "Souza", "Tavares", "Teixeira",
    "Vieira", "Xavier",
)  # fmt: skip


def demo_names(driver_ids: Iterable[int]) -> dict[int, str]:
    """A made-up name for each driver id: the same for an id every time (given the same
    ids), no two alike."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    for driver_id in sorted(driver_ids):
        # A str seed: the same draws in every run. Made-up names, not secrets.
        draw = random.Random(f"demo-driver-{driver_id}")  # noqa: S311
        name = ""
        while not name or name in taken:
            surnames = draw.sample(SURNAMES, k=draw.choice((1, 2)))
            name = " ".join([draw.choice(FIRST_NAMES), *surnames])
        names[driver_id] = name
        taken.add(name)
    return names


class Command(BaseCommand):
    help = "Give the drivers of the emulator's vehicles made-up names (those without one)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Name them even when FLEET_ENVIRONMENT is not 'emulator'.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.FLEET_ENVIRONMENT != "emulator" and not options["force"]:
            raise CommandError(
                "demo drivers get made-up names: they are only named for the emulator "
                "(use --force if you really mean it)"
            )
        try:
            driver_ids = fleet_driver_ids()
        except FleetDataUnavailable as exc:
            raise CommandError(
                f"the vehicle list could not be read from {settings.FLEET_BASE_URL} "
                f"({exc.outcome}): is the emulator running?"
            ) from None
        # And those the history of who had each vehicle holds (`demo_history`).
        driver_ids = sorted(set(driver_ids) | set(history_driver_ids()))
        named = driver_names_add(names=demo_names(driver_ids))
        self.stdout.write(
            f"Demo drivers: {named} of the fleet's {len(driver_ids)} drivers named "
            f"(the others already had a name)."
        )
