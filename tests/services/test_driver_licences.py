"""A driver's CPF and licence (fleet.services.driver_cpfs, fleet.services.driver_licences):
the CPF kept encrypted and found again by its digest, each lookup of it attached to the
driver as their licence, a page's drivers' licences read at once, and the batch of the
licences looked up too long ago, walked a chunk at a time, against the emulator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.models import CnhLookup, CnhLookupItem, Driver
from fleet.services.cnh import cnh_lookup_create
from fleet.services.cnh_privacy import cnh_lookups_purge
from fleet.services.driver_cpfs import (
    InvalidDriverCpf,
    cpf_digest,
    driver_cpf,
    driver_cpf_set,
)
from fleet.services.driver_licences import (
    driver_licence,
    driver_licences_batch_start,
    driver_licences_due,
    driver_licences_of,
)
from tests.conftest import run_tasks

pytestmark = pytest.mark.django_db(transaction=True)

SUSPENDED_CPF, NO_LICENCE_CPF = "42242242245", "00000040495"
CPFS = ["52998224725", "11144477735", "12345678909", "39053344705", "86288366757"]
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def driver_with(driver_id: int, value: str = "", name: str = "") -> Driver:
    driver = Driver.objects.create(driver_id=driver_id, name=name or f"Motorista {driver_id}")
    if value:
        driver_cpf_set(driver=driver, value=value)
    return driver


def looked_up(user: Any, *cpfs: str) -> CnhLookup:
    lookup = cnh_lookup_create(owner=user, cpfs=list(cpfs), batch=len(cpfs) > 1, purpose="periodic")
    run_tasks()
    return lookup


def test_a_drivers_cpf_is_stored_encrypted_and_read_back(db: Any) -> None:
    driver = driver_with(154, "422.422.422-45")

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT cpf_encrypted, cpf_digest FROM fleet_driver WHERE id = %s", [driver.pk]
        )
        stored, digest = cursor.fetchone()
    assert SUSPENDED_CPF not in stored
    assert "422.422.422" not in stored
    assert SUSPENDED_CPF not in digest
    assert digest == cpf_digest(SUSPENDED_CPF)
    assert driver_cpf(Driver.objects.get(pk=driver.pk)) == SUSPENDED_CPF
    with pytest.raises(InvalidDriverCpf):
        driver_cpf_set(driver=driver, value="422.422.422-46")


def test_a_lookup_of_a_drivers_cpf_becomes_their_licence(manager: Any) -> None:
    suspended = driver_with(154, SUSPENDED_CPF)
    other = driver_with(155, CPFS[0])
    nobody = driver_with(156)

    lookup = looked_up(manager, "422.422.422-45")

    licence = driver_licence(Driver.objects.select_related("licence__lookup").get(pk=suspended.pk))
    assert licence is not None
    assert (licence.found, licence.situation, licence.valid) == (True, "SUSPENSA", False)
    assert licence.lookup_id == lookup.public_id
    assert licence.category
    assert licence.expires_on
    assert licence.points is not None
    assert driver_licence(Driver.objects.get(pk=other.pk)) is None
    assert driver_licence(Driver.objects.get(pk=nobody.pk)) is None


def test_the_newest_answer_is_the_licence_and_no_licence_found_is_one(manager: Any) -> None:
    driver = driver_with(154, CPFS[0])
    first = looked_up(manager, CPFS[0], CPFS[1])
    assert Driver.objects.get(pk=driver.pk).licence.lookup_id == first.pk

    driver_cpf_set(driver=driver, value=NO_LICENCE_CPF)  # a new CPF forgets the old licence
    assert Driver.objects.get(pk=driver.pk).licence is None
    second = looked_up(manager, NO_LICENCE_CPF)

    licence = driver_licence(Driver.objects.get(pk=driver.pk))
    assert licence is not None
    assert (licence.found, licence.valid, licence.lookup_id) == (False, False, second.public_id)


def test_a_lookup_without_an_answer_leaves_the_licence(manager: Any, emulator: Any) -> None:
    driver = driver_with(154, CPFS[0])
    first = looked_up(manager, CPFS[0])
    emulator.fault("/v2/cnh/lookup", status=500)

    failed = looked_up(manager, CPFS[0])

    assert CnhLookup.objects.get(pk=failed.pk).status == "failed"
    assert Driver.objects.get(pk=driver.pk).licence.lookup_id == first.pk


def test_a_lookup_past_its_retention_takes_the_drivers_licence_with_it(
    manager: Any, settings: Any
) -> None:
    settings.FLEET_CNH_RETENTION_DAYS = 30
    driver = driver_with(154, SUSPENDED_CPF)
    with time_machine.travel(NOW - timedelta(days=40), tick=False):
        looked_up(manager, SUSPENDED_CPF)
    assert Driver.objects.get(pk=driver.pk).licence is not None

    with time_machine.travel(NOW, tick=False):
        assert cnh_lookups_purge() == 1

    after = Driver.objects.get(pk=driver.pk)
    assert (after.licence, driver_licence(after)) == (None, None)
    assert driver_cpf(after) == SUSPENDED_CPF


def test_a_pages_drivers_licences_are_read_in_one_query(manager: Any) -> None:
    for number, value in enumerate([SUSPENDED_CPF, *CPFS[:3]]):
        driver_with(200 + number, value)
    looked_up(manager, SUSPENDED_CPF, *CPFS[:3])

    with CaptureQueriesContext(connection) as queries:
        licences = driver_licences_of([200, 201, 202, 203, 299, None])

    assert len(queries) == 1
    assert sorted(licences) == [200, 201, 202, 203]
    assert licences[200].situation == "SUSPENSA"
    assert not licences[200].valid


def test_the_drivers_due_are_those_with_a_cpf_not_looked_up_since_by_keyset(
    manager: Any,
) -> None:
    with time_machine.travel(NOW - timedelta(days=40), tick=False):
        old = driver_with(1, CPFS[0])
        looked_up(manager, CPFS[0])
    with time_machine.travel(NOW - timedelta(days=2), tick=False):
        recent = driver_with(2, CPFS[1])
        looked_up(manager, CPFS[1])
    never = driver_with(3, CPFS[2])
    driver_with(4)  # no CPF
    later = driver_with(5, CPFS[3])

    before = NOW - timedelta(days=30)
    due = driver_licences_due(before=before, limit=10)
    first = driver_licences_due(before=before, limit=2)
    rest = driver_licences_due(before=before, after=first[-1].pk, limit=2)

    assert [d.pk for d in due] == [old.pk, never.pk, later.pk]
    assert [d.pk for d in first + rest] == [d.pk for d in due]
    assert recent.pk not in [d.pk for d in due]


def test_the_batch_looks_up_the_drivers_due_a_chunk_at_a_time(manager: Any, settings: Any) -> None:
    settings.FLEET_CNH_BATCH_LIMIT = 2
    with time_machine.travel(NOW - timedelta(days=2), tick=False):
        recent = driver_with(10, CPFS[4])
        looked_up(manager, CPFS[4])
    drivers = [driver_with(20 + n, value) for n, value in enumerate([SUSPENDED_CPF, *CPFS[:4]])]
    driver_with(30)  # no CPF

    with time_machine.travel(NOW, tick=False) as clock:
        driver_licences_batch_start(user=manager, older_than_days=30)
        for _step in range(12):
            run_tasks()
            clock.shift(timedelta(seconds=20))

    batches = CnhLookup.objects.filter(kind="batch").order_by("pk")
    assert [b.items.count() for b in batches] == [2, 2, 1]
    assert {b.status for b in batches} == {"done"}
    assert all(b.owner == manager and b.purpose == "periodic" for b in batches)
    checked = Driver.objects.filter(pk__in=[d.pk for d in drivers])
    assert all(d.licence_id is not None for d in checked)
    assert all((d.licence_checked_at or NOW - timedelta(1)) >= NOW for d in checked)
    assert CnhLookupItem.objects.filter(cpf=CPFS[4]).count() == 1  # the recent one was not due
    assert (Driver.objects.get(pk=recent.pk).licence_checked_at or NOW) < NOW


def test_the_batch_waits_for_the_daily_limit_to_renew(manager: Any, settings: Any) -> None:
    settings.FLEET_CNH_BATCH_LIMIT = 5
    settings.FLEET_CNH_DAILY_LIMIT = 2
    for number, value in enumerate(CPFS[:3]):
        driver_with(40 + number, value)

    with time_machine.travel(NOW, tick=False) as clock:
        driver_licences_batch_start(user=manager, older_than_days=30)
        for _step in range(6):
            run_tasks()
            clock.shift(timedelta(seconds=20))
        today = [b.items.count() for b in CnhLookup.objects.order_by("pk")]
        clock.shift(timedelta(days=1))
        for _step in range(6):
            run_tasks()
            clock.shift(timedelta(seconds=20))

    assert today == [2]
    assert [b.items.count() for b in CnhLookup.objects.order_by("pk")] == [2, 1]
    assert Driver.objects.filter(licence__isnull=False).count() == 3
