"""The dashboard's figures come from tallies kept in the transaction that writes each
fine: after every kind of write (new fines through the receiver and processing,
duplicates and replays, a fine's amount, treatment, document, vehicle and month
changing, drivers attributed later, several workers at once) they equal the sums
computed from scratch over the fines, and a dashboard shows a fine as soon as it is
written. On SQLite by default, on PostgreSQL with DATABASE_URL."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult, get_date_max

from fleet import plates
from fleet.models import DeliveryStatus, Driver, Fine, WebhookDelivery
from fleet.services.attribution import fine_driver_correct, fine_drivers_attribute
from fleet.services.dashboard import (
    fine_figures,
    fine_figures_publish,
    local_midnight,
    month_start,
)
from fleet.services.figures import FineFigures, Total
from fleet.services.tallies import (
    FineState,
    day_key,
    fine_contributions,
    fine_tallies_apply,
    fine_tallies_counted,
    fine_tallies_differences,
    month_key,
)
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.processing import deliveries_process_received, delivery_replay
from portal.lib import worker
from tests.conftest import ROOT, _database_url, start_db_worker, stop_db_worker, wait_until

pytestmark = pytest.mark.usefixtures("held_clock")

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
DOCUMENT = "https://detran.example/auto/1.pdf"


def frame(
    id: int,
    *,
    plate: str = "ABC1D23",
    amount: object = "100.00",
    months_ago: int = 0,
    treated: bool = False,
    document: str | None = None,
    updated: int | None = None,
    note: str = "",
) -> dict[str, Any]:
    """A fine event; `updated`: its `updatedAt`, in minutes after a fixed moment."""
    committed = month_start(timezone.localdate(), back=months_ago) + timedelta(days=3)
    occurred = datetime.combine(committed, datetime.min.time(), tzinfo=UTC) + timedelta(hours=15)
    event: dict[str, Any] = {
        "id": id,
        "treated": treated,
        "carPlate": plate,
        "occurredAt": occurred.isoformat().replace("+00:00", "Z"),
        "amount": amount,
    }
    if note:
        event["description"] = note
    if updated is not None:
        moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=updated)
        event["updatedAt"] = moment.isoformat().replace("+00:00", "Z")
    return {"frame": event, "linkFrame": document, "link": "https://boletos.example/1"}


def store(client: Any, payload: dict[str, Any]) -> None:
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202, response.content


def deliver(client: Any, *payloads: dict[str, Any]) -> None:
    """Through the receiver, then processed as the worker's task does."""
    for payload in payloads:
        store(client, payload)
    deliveries_process_received()


def from_scratch() -> dict[str, Any]:
    """The dashboard's figures summed over the fines with plain aggregates."""
    today = timezone.localdate()
    fines = Fine.objects.order_by()
    untreated = fines.filter(treated=False)
    sums: dict[str, Any] = {"count": Count("pk"), "amount": Sum("amount", default=Decimal(0))}

    def total(selected: Any) -> tuple[int, Decimal]:
        found = selected.aggregate(**sums)
        return found["count"], found["amount"]

    months = []
    for back in range(11, -1, -1):
        start = month_start(today, back=back)
        end = month_start(start, back=-1)
        months.append(
            (
                start,
                *total(
                    fines.filter(
                        occurred_at__gte=local_midnight(start), occurred_at__lt=local_midnight(end)
                    )
                ),
            )
        )
    amount = Sum("amount", default=Decimal(0))
    by_vehicle = (
        untreated.exclude(registration="")
        .values("registration")
        .annotate(count=Count("pk"), amount=amount)
    )
    # Only drivers the history or a person established are ranked; the guesses apart.
    by_driver = (
        untreated.filter(driver_id__isnull=False)
        .exclude(driver_basis="list")
        .values("driver_id")
        .annotate(count=Count("pk"), amount=amount)
    )
    probable = untreated.filter(driver_basis="list", driver_id__isnull=False)
    return {
        "untreated": total(untreated),
        "without_document": fines.filter(link_frame="").count(),
        "recent": total(fines.filter(received_at__gte=local_midnight(today - timedelta(days=6)))),
        "months": months,
        "vehicles": list(
            by_vehicle.order_by("-amount", "-count", "registration").values_list(
                "registration", "count", "amount"
            )[:5]
        ),
        "most_fined": list(
            by_vehicle.order_by("-count", "registration").values_list("registration", "count")[:5]
        ),
        "drivers": list(
            by_driver.order_by("-amount", "-count", "driver_id").values_list(
                "driver_id", "count", "amount"
            )[:5]
        ),
        "probable": total(probable),
        "uncertain": total(untreated.filter(driver_basis="uncertain")),
    }


def shown(figures: FineFigures) -> dict[str, Any]:
    """The same figures, as the dashboard has them."""
    return {
        "untreated": (figures.untreated.count, figures.untreated.amount),
        "without_document": figures.without_document,
        "recent": (figures.recent.count, figures.recent.amount),
        "months": [(m.month, m.count, m.amount) for m in figures.months],
        "vehicles": [(v.registration, v.count, v.amount) for v in figures.top_vehicles],
        "most_fined": [(v.registration, v.untreated) for v in figures.most_fined],
        "drivers": [(d.driver_id, d.count, d.amount) for d in figures.top_drivers],
        "probable": (figures.probable.count, figures.probable.amount),
        "uncertain": (figures.uncertain.count, figures.uncertain.amount),
    }


def assert_exact() -> FineFigures:
    """The dashboard's figures (as it would read them now) equal the sums from scratch,
    and so does every tally, shown or not."""
    figures = fine_figures()
    assert shown(figures) == from_scratch()
    assert fine_tallies_differences() == {}
    return figures


@pytest.fixture
def fleet(emulator: Any, fleet_settings: Any) -> list[dict[str, Any]]:
    """The emulator's vehicles with a driver, the list already read by the portal, so that
    processing attributes fines to drivers."""
    vehicle_search()
    return [v for v in emulator.vehicles() if v["driver_id"] is not None]


# --- What one fine counts in ---------------------------------------------------------


def test_a_fine_counts_by_day_month_document_and_while_untreated_by_vehicle_and_driver():
    received = datetime(2026, 11, 25, 2, 30, tzinfo=UTC)  # the 24th in São Paulo
    untreated = FineState(
        treated=False,
        amount=Decimal("293.47"),
        registration="ABC1C34",
        driver_id=42,
        occurred_at=datetime(2026, 11, 1, 1, 0, tzinfo=UTC),  # still October there
        received_at=received,
        has_document=False,
    )
    treated = FineState(
        treated=True,
        amount=None,
        registration="ABC1C34",
        driver_id=42,
        occurred_at=None,
        received_at=received,
        has_document=True,
    )

    assert sorted(fine_contributions(untreated)) == [
        ("day", "2026-11-24", 1, 29347),
        ("driver", "00000000000000000042", 1, 29347),
        ("month", "2026-10", 1, 29347),
        ("no_document", "", 1, 29347),
        ("untreated", "", 1, 29347),
        ("vehicle", "ABC1C34", 1, 29347),
    ]
    assert fine_contributions(treated) == [("day", "2026-11-24", 1, 0)]


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ["America/Sao_Paulo", "Asia/Kolkata", "America/St_Johns"])
def test_a_rebuild_counts_each_fine_in_its_local_day_and_month(settings, zone):
    """The rebuild groups by the hour in UTC (the database alone), then puts each hour in
    its local day and month: exact around midnight, in the zones whose offset is half an
    hour (an hour that falls in two days is counted by the minute), and at a change of
    offset (St. John's, in November). The same figures as each fine's contributions."""
    settings.TIME_ZONE = zone
    moments = [
        datetime(2026, 10, 31, hour, minute, second, tzinfo=UTC)
        for hour in (0, 2, 3, 18, 19, 23)
        for minute, second in ((0, 0), (29, 59), (30, 0), (59, 59))
    ] + [datetime(2026, 11, 1, 3, 30, tzinfo=UTC), datetime(2026, 11, 1, 4, 15, tzinfo=UTC)]
    Fine.objects.bulk_create(
        Fine(
            key=f"id:{n}",
            external_id=str(n),
            payload={},
            treated=True,
            amount=Decimal(n),
            occurred_at=moment,
            received_at=moment,
            updated_at=moment,
        )
        for n, moment in enumerate(moments)
    )
    expected: dict[tuple[str, str], tuple[int, int]] = {}
    for fine in Fine.objects.all():
        for dimension, key, count, cents in fine_contributions(FineState.of(fine)):
            had = expected.get((dimension, key), (0, 0))
            expected[dimension, key] = (had[0] + count, had[1] + cents)

    counted = fine_tallies_counted()
    assert counted == expected
    assert len({key for dimension, key in counted if dimension == "day"}) >= 2  # midnight


# --- Writes through the receiver and processing ----------------------------------------


@pytest.mark.django_db
def test_new_fines_duplicates_and_replays_are_counted_once(client, fleet):
    a, b = fleet[0]["car_plate"], fleet[1]["car_plate"]
    deliver(
        client,
        frame(1, plate=a, amount="100.10"),
        frame(2, plate=a, amount="200.20", months_ago=1, document=DOCUMENT),
        frame(3, plate=b, amount="1.293,47", months_ago=2),
        frame(4, plate=b, amount="999.99", treated=True),
        frame(5, plate=b, amount="1.00", months_ago=13),
        frame(6, plate="", amount="a lot"),
        frame(7, plate="ZZZ9Z99", amount=88.5, months_ago=11),
    )
    figures = assert_exact()
    assert (figures.untreated.count, figures.untreated.amount) == (6, Decimal("1683.27"))
    assert figures.without_document == 6

    deliver(
        client,
        frame(1, plate=a, amount="100.10"),
        frame(3, plate=b, amount="1.293,47", months_ago=2, note="the same fine, described"),
    )
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.DUPLICATE).count() == 1
    assert shown(fine_figures()) == shown(figures)  # the exact duplicate changed nothing

    replayed = delivery_replay(ids=WebhookDelivery.objects.values_list("pk", flat=True))

    assert replayed == {DeliveryStatus.PROCESSED: 8, DeliveryStatus.DUPLICATE: 1}
    assert shown(assert_exact()) == shown(figures)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"amount": "130.16"}, {"untreated": (1, Decimal("130.16"))}),
        ({"amount": "nothing"}, {"untreated": (1, Decimal("0"))}),
        ({"treated": True}, {"untreated": (0, Decimal("0")), "vehicles": []}),
        ({"document": DOCUMENT}, {"without_document": 0}),
        ({"plate": "XYZ9876"}, {"vehicles": [("XYZ9I76", 1, Decimal("100.00"))]}),
        ({"plate": ""}, {"vehicles": []}),
        ({"months_ago": 3}, {"untreated": (1, Decimal("100.00"))}),
    ],
    ids=["amount", "amount-unreadable", "treated", "document", "vehicle", "no-vehicle", "month"],
)
def test_a_fine_that_changes_moves_between_the_tallies(client, change, expected):
    deliver(client, frame(1, updated=1))
    assert_exact()

    deliver(client, frame(1, updated=2, **change))

    figures = assert_exact()
    for name, value in expected.items():
        assert shown(figures)[name] == value
    months = {m.month: m.count for m in figures.months}
    moved = month_start(timezone.localdate(), back=change.get("months_ago", 0))
    assert months[moved] == 1


@pytest.mark.django_db
def test_an_older_event_arriving_late_changes_no_figure(client):
    deliver(client, frame(1, amount="50.00", updated=1))
    deliver(client, frame(1, amount="70.00", treated=True, updated=5))
    treated = shown(assert_exact())

    deliver(client, frame(1, amount="90.00", treated=False, updated=3))  # stale

    assert shown(assert_exact()) == treated
    assert treated["untreated"] == (0, Decimal("0"))
    assert Fine.objects.get().amount == Decimal("70.00")


@pytest.mark.django_db
def test_a_document_once_there_stays_counted_as_there(client):
    deliver(client, frame(1, updated=1, document=DOCUMENT))
    deliver(client, frame(1, updated=2, document=None))  # null: "not available yet"

    assert assert_exact().without_document == 0


@pytest.mark.django_db
def test_drivers_attributed_after_the_fines_were_written_are_counted(client, emulator, settings):
    settings.FLEET_BASE_URL = emulator.url
    vehicles = [v for v in emulator.vehicles() if v["driver_id"] is not None][:3]
    deliver(
        client,
        *(frame(n, plate=v["car_plate"], amount=f"{n}0.00") for n, v in enumerate(vehicles, 1)),
        frame(9, plate=vehicles[0]["car_plate"], treated=True),
    )
    assert fine_figures().top_drivers == []  # no list at hand while processing

    assert fine_drivers_attribute() == 4

    figures = assert_exact()
    # The vehicle list's drivers (no history yet): probable, counted apart, not ranked;
    # the treated one is not counted.
    assert figures.top_drivers == []
    assert figures.probable.count == 3


# --- Reading -------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_dashboard_shows_a_fine_as_soon_as_it_is_written(client, manager):
    client.force_login(manager)
    deliver(client, frame(1, amount="10.00"))
    page = client.get("/", headers=ENGLISH).text
    assert 'data-testid="untreated-amount">R$&nbsp;10.00<' in page

    deliver(client, frame(2, amount="5.25"))

    page = client.get("/", headers=ENGLISH).text
    assert 'data-testid="untreated-amount">R$&nbsp;15.25<' in page
    assert "in 2 untreated fines" in page


@pytest.mark.django_db
def test_while_no_fine_changes_a_dashboard_reads_one_row(client):
    deliver(client, frame(1))
    first = fine_figures()

    with CaptureQueriesContext(connection) as again:
        assert fine_figures() == first

    assert len(again) == 1  # the tallies' version
    assert "fleet_finetally" in again[0]["sql"]


@pytest.mark.django_db
def test_after_a_write_the_next_dashboard_finds_its_figures_ready(client, manager):
    client.force_login(manager)
    deliver(client, frame(1))
    client.get("/")
    deliver(client, frame(2, amount="7.50"))  # processing ends by preparing them

    with CaptureQueriesContext(connection) as view:
        page = client.get("/", headers=ENGLISH).text

    assert 'data-testid="untreated-amount">R$&nbsp;107.50<' in page
    tallies = [q["sql"] for q in view if "fleet_finetally" in q["sql"]]
    assert len(tallies) == 1  # the version, no figure
    assert not [q["sql"] for q in view if '"fleet_fine"' in q["sql"]]


def a_state(amount: str) -> FineState:
    return FineState(
        treated=False,
        amount=Decimal(amount),
        registration="ABC1C34",
        driver_id=None,
        occurred_at=None,
        received_at=timezone.now(),
        has_document=False,
    )


@pytest.mark.django_db(transaction=True)
def test_figures_read_in_a_writing_transaction_reach_the_cache_only_if_it_commits():
    def undone() -> None:
        with transaction.atomic():
            fine_tallies_apply([(None, a_state("99.99"))])
            fine_figures_publish()
            raise RuntimeError("undone")

    with pytest.raises(RuntimeError):
        undone()
    fine_tallies_apply([(None, a_state("12.34"))])  # the same version, not published

    assert fine_figures().untreated == Total(1, Decimal("12.34"))

    with transaction.atomic():
        fine_tallies_apply([(None, a_state("5.00"))])
        fine_figures_publish()
    with CaptureQueriesContext(connection) as reads:
        figures = fine_figures()

    assert figures.untreated == Total(2, Decimal("17.34"))
    assert len(reads) == 1  # the version: the figures were in the cache at the commit


@pytest.mark.django_db
def test_a_driver_renamed_in_the_admin_is_named_at_once(
    client, fleet, admin_client, django_capture_on_commit_callbacks
):
    vehicle = fleet[0]
    named = Driver.objects.create(driver_id=vehicle["driver_id"], name="Ana")
    deliver(client, frame(1, plate=vehicle["car_plate"]))
    # Set by a person: established, so ranked (the vehicle list's alone is a guess).
    fine_driver_correct(
        fine_id=Fine.objects.get().pk,
        driver_id=vehicle["driver_id"],
        reason="seen on the camera",
        user=User.objects.create_user("someone"),
    )
    assert [d.name for d in fine_figures().top_drivers] == ["Ana"]

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:fleet_driver_change", args=[named.pk]),
            {"driver_id": vehicle["driver_id"], "name": "Ana Souza"},
        )

    assert response.status_code == 302
    assert [d.name for d in fine_figures().top_drivers] == ["Ana Souza"]


@pytest.mark.django_db
def test_a_rebuild_puts_right_tallies_a_write_around_them_left_wrong(client, fleet):
    deliver(client, frame(1, plate=fleet[0]["car_plate"]), frame(2, months_ago=2))
    Fine.objects.filter(external_id="1").update(treated=True, amount=Decimal("7.00"))
    output = io.StringIO()
    with pytest.raises(CommandError, match="tallies differ from the fines"):
        call_command("fine_tallies", stdout=output)
    assert "untreated -: stored 2 fines, 20000 cents; the fines sum up to 1 fines" in (
        output.getvalue()
    )

    call_command("fine_tallies", "--rebuild", stdout=output)

    assert_exact()
    call_command("fine_tallies", stdout=output)
    assert "The tallies are what the fines sum up to." in output.getvalue()


# --- Several workers at once -----------------------------------------------------------

FINES, EVENTS = 12, 30


def events(plates_: list[str]) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """Each fine's events, shuffled: treated flips, amounts, vehicles (among `plates_`)
    and months change, the document arrives; and what each fine must end as (its latest
    event)."""
    rng = random.Random(7)  # noqa: S311 - not secret
    sent, final = [], {}
    for fine in range(1, FINES + 1):
        for number in range(1, EVENTS + 1):
            event = frame(
                fine,
                plate=rng.choice(plates_),
                amount=f"{rng.randrange(1, 2000)}.{rng.randrange(100):02d}",
                months_ago=rng.randrange(3),
                treated=rng.random() < 0.5,
                document=DOCUMENT if number > EVENTS // 2 else None,
                updated=fine * 100 + number,
            )
            sent.append(event)
            final[fine] = event["frame"]
    rng.shuffle(sent)
    return sent, final


# From `start_at` (Unix time): process what is `received`, `batch` deliveries to a
# transaction, until none is left; or replay every delivery, one to a transaction.
_PROCESSOR = """
import sys, time, django
django.setup()
from fleet.models import WebhookDelivery
from fleet.webhooks.processing import deliveries_process_received, delivery_replay
mode, start_at = sys.argv[1], float(sys.argv[2])
time.sleep(max(0.0, start_at - time.time()))
if mode == "replay":
    print(sum(delivery_replay(ids=WebhookDelivery.objects.values_list("pk", flat=True)).values()))
else:
    while sum(deliveries_process_received(batch=int(mode)).values()):
        pass
"""


@pytest.mark.timeout(300)
@pytest.mark.django_db(transaction=True)
def test_workers_at_once_lose_no_change_and_count_none_twice(client, emulator, fleet_settings):
    """Two `db_worker`s (batches of 64, each taking deliveries the other has not locked),
    two processes with batches of 4 and one replaying every delivery, all at once on the
    same twelve fines; fines written without a vehicle list at hand are attributed to
    their drivers by the workers meanwhile."""
    fleet_settings.FLEET_WEBHOOK_BATCH_SECONDS = 600  # the receiver's own run: not in this test
    vehicles = emulator.vehicles()
    driven = [v["car_plate"] for v in vehicles if v["driver_id"] is not None]
    sent, final = events([*driven[:3], "ZZZ9Z99"])
    for payload in [*sent, *sent[:10]]:  # ten exact duplicates
        store(client, payload)
    asked = list(DBTaskResult.objects.values_list("pk", flat=True))
    workers = [start_db_worker(emulator, worker_id=f"tallies-{number}") for number in range(2)]
    try:
        start_at = timezone.now() + timedelta(seconds=4)
        for _ in range(2):
            worker.enqueue("webhook_deliveries_process", run_after=start_at)
        processors = [
            subprocess.Popen(
                [sys.executable, "-c", _PROCESSOR, mode, str(start_at.timestamp())],
                cwd=ROOT,
                env=_environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for mode in ("4", "4", "replay")
        ]
        for processor in processors:
            _out, errors = processor.communicate(timeout=180)
            assert processor.returncode == 0, errors
        # Work asked for now or soon; not the nightly purge the processing runs ask for.
        nightly = Q(run_after__gt=timezone.now() + timedelta(hours=1), run_after__lt=get_date_max())
        waiting = (
            DBTaskResult.objects.exclude(pk__in=asked)
            .filter(status__in=["READY", "RUNNING"])
            .exclude(nightly)
        )
        wait_until(
            lambda: (
                not waiting.exists()
                and not WebhookDelivery.objects.filter(status=DeliveryStatus.RECEIVED).exists()
            ),
            timeout=90,
            what="the workers did not finish",
        )
    finally:
        for process in workers:
            stop_db_worker(process)

    assert not DBTaskResult.objects.filter(status="FAILED").exists()
    assert not list(WebhookDelivery.objects.filter(status="failed").values_list("error", flat=True))
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {
        DeliveryStatus.PROCESSED,
        DeliveryStatus.DUPLICATE,
    }
    fines = {int(fine.external_id): fine for fine in Fine.objects.all()}
    assert len(fines) == FINES
    for number, event in final.items():  # every fine in the state of its latest event
        assert fines[number].treated == event["treated"]
        assert fines[number].registration == plates.registration(event["carPlate"])
        assert str(fines[number].amount) == event["amount"]
        assert fines[number].link_frame == DOCUMENT
    assert Fine.objects.filter(driver_id__isnull=False).exists()
    assert_exact()


def _environment() -> dict[str, str]:
    """A process of the portal's on the test database."""
    return dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=_database_url())


def test_the_month_and_day_keys_sort_as_their_dates():
    days = [date(999, 12, 31), date(2026, 1, 2), date(2026, 10, 1), date(2026, 11, 30)]
    assert sorted(map(day_key, days)) == list(map(day_key, days))
    assert sorted(map(month_key, days)) == list(map(month_key, days))
