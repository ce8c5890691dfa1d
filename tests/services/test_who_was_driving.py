"""Who was driving: the history of who had each vehicle, taken from the refreshes
of the vehicle list (the emulator's vehicles change hands as its clock moves), and each
fine attributed by the moment it was committed; a person's correction wins.

Both clocks move together: the portal's (time-machine, stopped) and the emulator's
(its control surface). The vehicle list is refreshed as the refresh button does."""

from __future__ import annotations

import threading
from importlib import import_module
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection
from django.tasks import TaskResultStatus
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from alerts.models import Alert
from alerts.services.emails import alert_email
from alerts.services.preferences import alert_preferences_save
from alerts.services.sending import webhook_payload
from fleet import plates
from fleet.models import (
    Driver,
    DriverBasis,
    DriverObservation,
    DriverSpan,
    Fine,
    FineDriverCorrection,
    FineTally,
    TallyDimension,
    VehicleGroup,
    VehicleGroupMember,
)
from fleet.services.attribution import fine_driver_story
from fleet.services.tallies import driver_key
from portal.lib import worker
from tests.conftest import Emulator, run_tasks
from tests.driving import HOUR, MINUTE, Clocks, deliver, lone_handover
from tests.scopes import grant_whole_fleet

pytestmark = pytest.mark.django_db


@pytest.fixture
def clocks(fleet_settings: Any, emulator: Emulator, time_machine: Any) -> Clocks:
    fleet_settings.FLEET_DRIVER_HISTORY = True
    emulator.switch_handovers(True)
    return Clocks(time_machine, emulator)


def untreated_by_driver(driver_id: int) -> int:
    key = driver_key(driver_id)
    tally = FineTally.objects.filter(dimension=TallyDimension.DRIVER, key=key).first()
    return tally.count if tally else 0


@pytest.fixture
def handed_over(clocks: Clocks, emulator: Emulator) -> dict[str, Any]:
    """A vehicle handed from D1 to D2 at `h`, seen by refreshes at h-150, h-90, h-30 (D1)
    and h+30, h+90 minutes (D2)."""
    plate, h, d1, d2 = lone_handover(emulator)
    for minutes in (-150, -90, -30, 30, 90):
        clocks.observe(h + minutes * MINUTE)
    return {"plate": plate, "h": h, "d1": d1, "d2": d2}


def test_fines_before_inside_and_after_the_window_get_d1_both_and_d2(client, handed_over):
    plate, h, d1, d2 = (handed_over[k] for k in ("plate", "h", "d1", "d2"))
    registration = plates.registration(plate)
    spans = list(DriverSpan.objects.filter(registration=registration).order_by("first_seen"))
    assert [(s.driver_id, s.first_seen, s.last_seen, s.next_seen) for s in spans] == [
        (d1, h - 150 * MINUTE, h - 30 * MINUTE, h + 30 * MINUTE),
        (d2, h + 30 * MINUTE, None, None),
    ]
    assert (spans[1].previous_driver_id, spans[1].previous_seen) == (d1, h - 30 * MINUTE)
    assert DriverObservation.objects.count() == 5

    before = deliver(client, 1, plate, h - 60 * MINUTE)
    inside = deliver(client, 2, plate, h - 10 * MINUTE)
    after = deliver(client, 3, plate, h + 60 * MINUTE)
    older = deliver(client, 4, plate, h - 5 * HOUR)
    without = deliver(client, 5, plate, None)

    assert (before.driver_basis, before.driver_id) == (DriverBasis.HISTORY, d1)
    assert (inside.driver_basis, inside.driver_id) == (DriverBasis.UNCERTAIN, None)
    assert inside.driver_span_id == spans[1].pk  # the candidates and the window
    assert (after.driver_basis, after.driver_id) == (DriverBasis.HISTORY, d2)
    # Older than the history, or without a moment: the list's driver now, marked so.
    assert (older.driver_basis, older.driver_id) == (DriverBasis.LIST, d2)
    assert (without.driver_basis, without.driver_id) == (DriverBasis.LIST, d2)
    # The dashboard's tallies by driver count only those established: the uncertain fine
    # is nobody's, the vehicle list's two are guesses, counted apart by how.
    assert untreated_by_driver(d1) == 1
    assert untreated_by_driver(d2) == 1
    guessed = dict(
        FineTally.objects.filter(dimension=TallyDimension.GUESSED).values_list("key", "count")
    )
    assert guessed == {"list": 2, "uncertain": 1}


def test_the_fine_page_says_who_and_how_it_is_known(client, handed_over, manager):
    grant_whole_fleet(manager)
    client.force_login(manager)
    plate, h, d1, d2 = (handed_over[k] for k in ("plate", "h", "d1", "d2"))
    english = {"Accept-Language": "en"}
    inside = deliver(client, 2, plate, h - 10 * MINUTE)
    page = client.get(inside.get_absolute_url(), headers=english).text
    assert "Changed hands between" in page
    assert f'href="/drivers/{d1}/"' in page
    assert f'href="/drivers/{d2}/"' in page
    before = deliver(client, 1, plate, h - 60 * MINUTE)
    page = client.get(before.get_absolute_url(), headers=english).text
    assert "had the vehicle from" in page
    assert "(seen at each refresh)" in page
    without = deliver(client, 5, plate, None)
    page = client.get(without.get_absolute_url(), headers=english).text
    assert "no history of the vehicle covers when it was committed" in page


@pytest.mark.django_db(transaction=True)  # the worker commits; on_commit asks it
def test_a_late_observation_attributes_the_recent_fines_again(client, clocks, emulator):
    plate, h, d1, _d2 = lone_handover(emulator)
    clocks.observe(h - 90 * MINUTE)
    clocks.observe(h - 30 * MINUTE)
    clocks.at(h - 5 * MINUTE)
    fine = deliver(client, 7, plate, h - 10 * MINUTE)
    # After the latest refresh, the vehicle's driver then: for now.
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.HISTORY, d1)
    assert untreated_by_driver(d1) == 1
    clocks.observe(h + 30 * MINUTE)
    run_tasks()
    fine.refresh_from_db()
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.UNCERTAIN, None)
    assert untreated_by_driver(d1) == 0


def test_a_fine_sent_again_with_another_moment_is_attributed_again(client, handed_over):
    plate, h, d1, d2 = (handed_over[k] for k in ("plate", "h", "d1", "d2"))
    fine = deliver(client, 3, plate, h - 60 * MINUTE)
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.HISTORY, d1)
    # The platform corrects when it was committed: after the hand-over.
    fine = deliver(client, 3, plate, h + 60 * MINUTE)
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.HISTORY, d2)
    assert (untreated_by_driver(d1), untreated_by_driver(d2)) == (0, 1)
    # Into the window: both candidates, and nobody's tally.
    fine = deliver(client, 3, plate, h - 10 * MINUTE)
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.UNCERTAIN, None)
    assert (untreated_by_driver(d1), untreated_by_driver(d2)) == (0, 0)
    # A person's choice stays whatever the platform sends later.
    Fine.objects.filter(pk=fine.pk).update(driver_basis=DriverBasis.MANUAL, driver_id=d1)
    fine = deliver(client, 3, plate, h + 60 * MINUTE)
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.MANUAL, d1)


@pytest.mark.django_db(transaction=True)  # the worker's task commits
def test_a_large_observation_from_a_page_is_taken_in_by_the_worker(
    clocks, emulator, fleet_settings
):
    """A refresh outside the worker writes a few changes itself; more (the first
    observation of a large fleet) are handed to the worker, where no web server's timeout
    stops them half-way."""
    fleet_settings.FLEET_DRIVER_HISTORY_PAGE_CHANGES = 10
    _plate, h, _d1, _d2 = lone_handover(emulator)
    clocks.observe(h - 90 * MINUTE)  # every vehicle first seen: more than 10 changes
    assert (DriverSpan.objects.count(), DriverObservation.objects.count()) == (0, 0)

    run_tasks()
    vehicles = len(emulator.vehicles())
    assert (DriverSpan.objects.count(), DriverObservation.objects.count()) == (vehicles, 1)
    # Two hours of hand-overs (how many depends on the day): the refresh writes them itself.
    fleet_settings.FLEET_DRIVER_HISTORY_PAGE_CHANGES = vehicles // 2
    clocks.observe(h + 30 * MINUTE)
    latest = DriverObservation.objects.get(seq=2)
    assert 1 <= latest.opened <= vehicles // 2
    assert DriverSpan.objects.count() == vehicles + latest.opened


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fetched_by", ["a page", "the worker"])
def test_the_worker_takes_a_large_observation_in_a_few_changes_a_run_after_the_rest(
    clocks, emulator, fleet_settings, fetched_by
):
    """The worker writes at most FLEET_DRIVER_HISTORY_TASK_CHANGES a run and asks for the
    next at a lower priority than the fines received: a large first observation never
    holds the worker for minutes while fines wait, whether a page fetched the list (and
    handed its observation over) or the worker did (for a task that needed it)."""
    fleet_settings.FLEET_DRIVER_HISTORY_PAGE_CHANGES = 10
    fleet_settings.FLEET_DRIVER_HISTORY_TASK_CHANGES = 50
    _plate, h, _d1, _d2 = lone_handover(emulator)
    vehicles = len(emulator.vehicles())
    assert vehicles > 150
    clocks.at(h - 90 * MINUTE)
    if fetched_by == "a page":
        clocks.observe(h - 90 * MINUTE)  # every vehicle first seen: the worker's
    else:
        worker.enqueue("driver_history_take_in_run")  # no list in this process: fetched
    (waiting,) = DBTaskResult.objects.filter(task_path__endswith=".driver_history_take_in_run")
    assert waiting.priority < 0  # below a fine's processing (priority 0)
    assert DriverSpan.objects.count() == 0

    run_tasks()

    runs = DBTaskResult.objects.filter(task_path__endswith=".driver_history_take_in_run")
    assert runs.count() == -(-vehicles // 50)  # a run for each fifty vehicles
    assert set(runs.values_list("status", flat=True)) == {TaskResultStatus.SUCCESSFUL}
    assert (DriverSpan.objects.count(), DriverObservation.objects.count()) == (vehicles, 1)
    assert DriverObservation.objects.get().opened == 50  # the last run's, the observation's


def test_a_refresh_where_nothing_changed_writes_one_row(clocks, emulator):
    _plate, h, _d1, _d2 = lone_handover(emulator)
    clocks.observe(h - 150 * MINUTE)
    spans = DriverSpan.objects.count()
    assert spans == len(emulator.vehicles())
    clocks.observe(h - 149 * MINUTE)  # no whole hour between: nobody changed hands
    assert DriverSpan.objects.count() == spans
    assert list(DriverObservation.objects.values_list("seq", "opened", "closed")) == [
        (2, 0, 0),
        (1, spans, 0),
    ]


def test_the_minimal_emulator_gives_no_moment_and_the_list_rule_is_marked(client, clocks, emulator):
    """Without `occurredAt` (the spec promises none) every fine keeps today's rule, marked."""
    plate, h, _d1, d2 = lone_handover(emulator)
    clocks.observe(h + 30 * MINUTE)
    fine = deliver(client, 9, plate, None)
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.LIST, d2)


# --- A person's correction -----------------------------------------------------------


def may_set_drivers(user: Any) -> Any:
    user.user_permissions.add(Permission.objects.get(codename="change_fine_driver"))
    return user


@pytest.mark.django_db(transaction=True)
def test_a_correction_is_audited_and_survives_refreshes_and_a_recompute(
    client, handed_over, clocks, manager, django_user_model
):
    plate, h, _d1, d2 = (handed_over[k] for k in ("plate", "h", "d1", "d2"))
    client.force_login(may_set_drivers(grant_whole_fleet(manager)))
    fine = deliver(client, 2, plate, h - 10 * MINUTE)
    response = client.post(
        f"/fines/{fine.pk}/driver", {"choice": str(d2), "reason": "  vehicle lent  "}
    )
    assert response.status_code == 302
    fine.refresh_from_db()
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.MANUAL, d2)
    audit = FineDriverCorrection.objects.get()
    assert (audit.fine_id, audit.user_id, audit.user_name) == (fine.pk, manager.pk, "Marcos")
    assert (audit.from_driver_id, audit.from_basis, audit.to_driver_id) == (
        None,
        DriverBasis.UNCERTAIN,
        d2,
    )
    assert audit.reason == "vehicle lent"
    assert audit.at is not None
    assert untreated_by_driver(d2) == 1

    clocks.observe(h + 150 * MINUTE)
    run_tasks()
    call_command("fine_drivers", "--recompute", stdout=open("/dev/null", "w"))  # noqa: SIM115
    fine.refresh_from_db()
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.MANUAL, d2)
    client.force_login(manager)  # hours later: the session has ended
    page = client.get(fine.get_absolute_url(), headers={"Accept-Language": "en"}).text
    assert "set by Marcos on" in page
    assert "“vehicle lent”" in page
    # The admin shows the audit on the fine's page.
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    admin = client.get(f"/admin/fleet/fine/{fine.pk}/change/", headers={"Accept-Language": "en"})
    assert admin.status_code == 200
    assert f"Marcos: — → {d2} · “vehicle lent”" in admin.text


def test_recompute_counts_what_changed_and_keeps_corrections(client, handed_over, capsys):
    plate, h, d1, _d2 = (handed_over[k] for k in ("plate", "h", "d1", "d2"))
    fine = deliver(client, 1, plate, h - 60 * MINUTE)
    Fine.objects.filter(pk=fine.pk).update(driver_basis=DriverBasis.LIST, driver_id=None)
    # The day is the portal's (São Paulo's), whatever hour of the UTC day the clock is at.
    day = timezone.localdate(h - 3 * HOUR).isoformat()
    call_command("fine_drivers", "--recompute", "--since", day)
    assert "1 fine(s) changed" in capsys.readouterr().out
    fine.refresh_from_db()
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.HISTORY, d1)


@pytest.mark.scoped
def test_without_the_permission_403_outside_the_scope_404(client, handed_over, django_user_model):
    plate, h = handed_over["plate"], handed_over["h"]
    fine = deliver(client, 2, plate, h - 10 * MINUTE)
    url, form = f"/fines/{fine.pk}/driver", {"choice": "other", "other": "5", "reason": "x"}

    seeing = grant_whole_fleet(django_user_model.objects.create_user("seeing", password="pw"))
    client.force_login(seeing)
    assert client.post(url, form).status_code == 403
    assert 'data-testid="fine-driver-form"' not in client.get(fine.get_absolute_url()).text

    elsewhere = may_set_drivers(django_user_model.objects.create_user("other", password="pw"))
    group = VehicleGroup.objects.create(name="Another region")
    group.plates.create(registration="ZZZ9Z99")
    VehicleGroupMember.objects.create(group=group, user=elsewhere)
    client.force_login(elsewhere)
    assert client.post(url, form).status_code == 404
    assert not FineDriverCorrection.objects.exists()
    fine.refresh_from_db()
    assert fine.driver_basis == DriverBasis.UNCERTAIN


def test_a_correction_needs_a_driver_and_a_reason(client, handed_over, manager):
    plate, h = handed_over["plate"], handed_over["h"]
    client.force_login(may_set_drivers(grant_whole_fleet(manager)))
    fine = deliver(client, 2, plate, h - 10 * MINUTE)
    url = f"/fines/{fine.pk}/driver"
    english = {"Accept-Language": "en"}
    response = client.post(url, {"choice": "", "reason": "lent"}, headers=english)
    assert response.status_code == 400
    assert "Choose who was driving" in response.text
    response = client.post(url, {"choice": "other", "other": "12", "reason": " "}, headers=english)
    assert response.status_code == 400
    assert not FineDriverCorrection.objects.exists()


@pytest.mark.django_db(transaction=True)  # each thread its own connection and transaction
def test_two_workers_taking_in_the_same_refresh_write_it_once(clocks, emulator):
    """Whichever way they interleave (the second reads the history before or after the
    first commits), one observation is written and every period once."""
    from django.db import connection

    from fleet.services.connection import fleet_cache_scope, fleet_client
    from fleet.services.driver_history import history_observe
    from fleet.services.vehicle_index import Snapshot

    plate, h, d1, d2 = lone_handover(emulator)
    clocks.observe(h - 30 * MINUTE)
    clocks.at(h + 30 * MINUTE)
    snapshot = Snapshot.from_columns(
        fleet_client().list_vehicle_columns(),
        scope=fleet_cache_scope(),
        version="taken-twice",
        fetched_at=(h + 30 * MINUTE).timestamp(),
    )
    start = threading.Barrier(2)
    results: list[Any] = []

    def take_in() -> None:
        start.wait()
        try:
            results.append(history_observe(snapshot))
        finally:
            connection.close()

    threads = [threading.Thread(target=take_in) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(result is None for result in results) == [False, True]
    assert DriverObservation.objects.count() == 2
    vehicles = len(emulator.vehicles())
    assert DriverSpan.objects.filter(next_seen__isnull=True).count() == vehicles
    registration = plates.registration(plate)
    assert list(
        DriverSpan.objects.filter(registration=registration)
        .order_by("first_seen")
        .values_list("driver_id", flat=True)
    ) == [d1, d2]


def test_the_list_filters_uncertain_fines_and_the_export_names_the_candidates(
    client, handed_over, manager
):
    import csv
    import io
    import re

    from fleet.services.drivers import driver_names_add

    plate, h, d1, d2 = (handed_over[k] for k in ("plate", "h", "d1", "d2"))
    driver_names_add(names={d1: "Ana Souza", d2: "Bruno Lima"})
    deliver(client, 1, plate, h - 60 * MINUTE)
    deliver(client, 2, plate, h - 10 * MINUTE)
    client.force_login(grant_whole_fleet(manager))
    english = {"Accept-Language": "en"}

    page = client.get("/fines/", {"uncertain": "on"}, headers=english).text
    assert re.findall(r'<tr data-testid="fine" data-key="([^"]*)"', page) == ["2"]

    response = client.get("/fines/export.csv", headers=english)
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    header, *rows = csv.reader(io.StringIO(text))
    by_id = {
        row[header.index("Id in the fleet platform")]: dict(zip(header, row, strict=True))
        for row in rows
    }
    assert by_id["1"]["Driver id"] == str(d1)
    assert by_id["1"]["Driver"] == "Ana Souza"
    assert by_id["1"]["How the driver is known"].startswith("Had the vehicle: A fact: ")
    assert by_id["1"]["Candidates"] == ""
    uncertain = by_id["2"]
    assert uncertain["Driver id"] == ""
    assert uncertain["How the driver is known"].startswith("Uncertain: The vehicle changed hands")
    assert uncertain["Candidates"] == f"Ana Souza ({d1}) or Bruno Lima ({d2})"
    after = uncertain["Changed hands after (yyyy-mm-dd hh:mm)"]
    before = uncertain["Changed hands before (yyyy-mm-dd hh:mm)"]
    assert after < before  # ISO moments: their order as text is their order in time


def test_the_alerts_name_who_was_driving_or_both_candidates(client, handed_over, django_user_model):
    plate, h, d1, d2 = (handed_over[k] for k in ("plate", "h", "d1", "d2"))
    Driver.objects.create(driver_id=d1, name="Ana Souza")
    manager = django_user_model.objects.create_user("gestor", email="gestor@example.com")
    alert_preferences_save(user=manager, delivery="immediate")

    before = deliver(client, 1, plate, h - 60 * MINUTE)
    inside = deliver(client, 2, plate, h - 10 * MINUTE)
    alerts = {a.fine_id: a for a in Alert.objects.filter(user=manager)}
    assert alerts[before.pk].data["driver"] == {
        "id": d1,
        "name": "Ana Souza",
        "basis": "history",
        "candidates": [],
    }
    assert alerts[inside.pk].data["driver"] == {
        "id": None,
        "name": "",
        "basis": "uncertain",
        "candidates": [{"id": d1, "name": "Ana Souza"}, {"id": d2, "name": ""}],
    }
    assert webhook_payload(alerts[inside.pk])["data"]["driver"]["candidates"][1]["id"] == d2

    def told(alert: Alert) -> str:
        message = alert_email(user=manager, alerts=[alert], language="en", time_zone="UTC")
        return str(message.body)

    assert f"Driver: Ana Souza ({d1}) — had the vehicle: A fact: " in told(alerts[before.pk])
    assert f"Driver: Uncertain: Ana Souza ({d1}) or {d2}. The vehicle changed hands" in told(
        alerts[inside.pk]
    )


def test_the_migration_marks_the_drivers_the_list_gave_before_the_history(monkeypatch):
    migration = import_module("fleet.migrations.0026_list_drivers_marked")
    monkeypatch.setattr(migration, "CHUNK", 2)
    as_written = [
        ("", 7),  # the list's driver, from before the history: no basis was written
        ("", None),  # not attributed yet
        (DriverBasis.HISTORY, 8),
        (DriverBasis.UNCERTAIN, None),
        (DriverBasis.LIST, None),
        (DriverBasis.MANUAL, 9),
        ("", 10),
    ]
    fines = [
        Fine.objects.create(key=f"id:{n}", treated=False, driver_basis=basis, driver_id=driver)
        for n, (basis, driver) in enumerate(as_written)
    ]
    for fine in fines[:2]:
        FineDriverCorrection.objects.create(
            fine=fine,
            user_name="Gestor",
            from_driver_id=fine.driver_id,
            from_basis="",
            to_driver_id=11,
            reason="emprestado",
        )

    with CaptureQueriesContext(connection) as queries:
        migration.list_basis_fill(apps, None)

    fines_updated = [
        q["sql"] for q in queries.captured_queries if q["sql"].startswith('UPDATE "fleet_fine"')
    ]
    assert len(fines_updated) == 4  # seven ids, two to a transaction
    found = list(Fine.objects.order_by("pk").values_list("driver_basis", "driver_id"))
    assert found == [
        (DriverBasis.LIST, 7),
        (DriverBasis.PENDING, None),
        (DriverBasis.HISTORY, 8),
        (DriverBasis.UNCERTAIN, None),
        (DriverBasis.LIST, None),
        (DriverBasis.MANUAL, 9),
        (DriverBasis.LIST, 10),
    ]
    corrections = FineDriverCorrection.objects.order_by("fine_id")
    assert list(corrections.values_list("from_basis", flat=True)) == [DriverBasis.LIST, ""]
    assert fine_driver_story(Fine.objects.get(pk=fines[0].pk)).basis == DriverBasis.LIST
