"""`manage.py driver_licences --older-than DAYS --as USERNAME`: the worker looks up the
licences of the drivers not looked up for DAYS days, as that user's lookups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
import time_machine
from django.core.management import CommandError, call_command

from fleet.models import CnhLookup, Driver
from fleet.services.driver_cpfs import driver_cpf_set
from tests.conftest import run_tasks

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_it_looks_up_the_drivers_due_as_the_user_given(manager: Any) -> None:
    for number, value in enumerate(["42242242245", "52998224725"]):
        driver = Driver.objects.create(driver_id=10 + number, name=f"Motorista {number}")
        driver_cpf_set(driver=driver, value=value)
    Driver.objects.create(driver_id=20, name="Sem CPF")
    out = StringIO()

    with time_machine.travel(NOW, tick=False) as clock:
        call_command("driver_licences", "--older-than", "30", "--as", "manager", stdout=out)
        for _step in range(4):
            run_tasks()
            clock.shift(timedelta(seconds=20))

    assert out.getvalue().startswith("2 driver(s) with a CPF not looked up since 2026-11-01")
    lookup = CnhLookup.objects.get()
    assert (lookup.owner, lookup.kind, lookup.status, lookup.items.count()) == (
        manager,
        "batch",
        "done",
        2,
    )
    assert Driver.objects.filter(licence__isnull=False).count() == 2


def test_it_refuses_a_user_it_does_not_know(db: Any) -> None:
    with pytest.raises(CommandError, match="no active user 'ninguem'"):
        call_command("driver_licences", "--older-than", "30", "--as", "ninguem")
