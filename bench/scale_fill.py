"""The data set of `bench.scale`, written into the portal's database by the portal's own
models (`python -m bench.scale_fill`, in a process with the portal's environment).

For the emulator's fleet of `--vehicles` (the same seed: the same plates and drivers),
it writes what years of a large fleet leave, as processing would have left it:

- a name for one driver in five (`Driver`, `DriverWord`: what the pickers search);
- three regions (vehicle groups) that share the fleet, and two managers: one who sees
  the whole fleet, one who sees the first region;
- `--fines` fines over three years, of every vehicle, 60 % treated, 70 % with their
  document, each with its notice number, infraction (`Wording`), amount, moment,
  driver and indication (`_indication`: a fifth still to indicate, deadlines from
  yesterday to 45 days ahead, 4 % missed); `--notifications` notifications; a
  delivery (processed, its body emptied as the retention leaves it) for one fine in ten;
- then the dashboard's tallies from scratch (`fine_tallies_rebuild`).

Rows go in with `bulk_create`, `CHUNK` to a transaction, into tables whose indexes are
built after them (`_indexes_after`: one sort per index, not ten million insertions at
random places in each) over a connection that does not wait for the disk at each
commit (`_loading`); the time of each part is printed. It prints, last, one line of
JSON: what the measurements need (plates, drivers, notice numbers, the managers'
passwords).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import django

django.setup()

from django.contrib.auth.models import Permission, User  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.models import Model  # noqa: E402
from django.utils import timezone  # noqa: E402

from emulator import infractions  # noqa: E402
from emulator.fleet import generate_vehicles  # noqa: E402
from fleet import plates  # noqa: E402
from fleet.management.commands.demo_drivers import demo_names  # noqa: E402
from fleet.models import (  # noqa: E402
    BODY_PURGED_STATUSES,
    WHOLE_FLEET_PERMISSION,
    DeadlineBasis,
    Driver,
    Fine,
    Indication,
    NeedBasis,
    Notification,
    VehicleGroup,
    VehicleGroupMember,
    VehicleGroupPlate,
    WebhookDelivery,
    Wording,
)
from fleet.services.drivers import driver_words_write  # noqa: E402
from fleet.services.scopes import scopes_changed  # noqa: E402
from fleet.services.tallies import fine_tallies_rebuild  # noqa: E402

CHUNK = 20_000
YEARS = 3
REGIONS = ("Sudeste", "Sul", "Nordeste")
# The fines' indications (`_indication`): the share still to indicate in time, and missed
# (still to indicate, their deadline passed).
NEEDED_SHARE = 0.20
MISSED_SHARE = 0.04
TITLES = ("Licenciamento a vencer", "Indicação de condutor", "Recall do fabricante")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_fill")
    parser.add_argument("--vehicles", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--fines", type=int, required=True)
    parser.add_argument("--notifications", type=int, required=True)
    options = parser.parse_args()
    vehicles = generate_vehicles(options.vehicles, options.seed)
    registrations = [plates.registration(vehicle.car_plate) for vehicle in vehicles]
    drivers = [vehicle.driver_id for vehicle in vehicles]
    rng = random.Random(options.seed)
    _loading()
    timed("drivers named", lambda: _drivers(sorted(set(drivers))[::5]))
    managers = timed("regions and managers", lambda: _regions(registrations))
    wordings = timed("wordings", _wordings)
    with _indexes_after(Fine, Notification, WebhookDelivery):
        references = timed(
            f"{options.fines:,} fines",
            lambda: _fines(rng, options.fines, registrations, drivers, wordings),
        )
        timed(
            f"{options.notifications:,} notifications",
            lambda: _notifications(rng, options.notifications, registrations, wordings),
        )
    timed("the dashboard's tallies", fine_tallies_rebuild)
    picked = rng.sample(range(len(vehicles)), k=min(20, len(vehicles)))
    print(
        json.dumps(
            {
                "plates": [vehicles[n].car_plate for n in picked],
                "drivers": [drivers[n] for n in picked],
                "references": references,
                "managers": managers,
            }
        )
    )
    return 0


def _loading() -> None:
    """This connection's commits do not wait for the disk (a fill that fails is started
    again), and SQLite keeps more of the database in memory while it writes."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for pragma in ("synchronous = OFF", "cache_size = -262144", "temp_store = MEMORY"):
                cursor.execute(f"PRAGMA {pragma}")
        else:
            cursor.execute("SET synchronous_commit = off")
            cursor.execute("SET maintenance_work_mem = '512MB'")


@contextmanager
def _indexes_after(*models: type[Model]) -> Iterator[None]:
    """The models' indexes (their `Meta.indexes`) dropped while the rows go in, then
    built again, each timed: what a migration builds, as it builds it."""
    indexes = [(model, index) for model in models for index in model._meta.indexes]
    with connection.schema_editor() as editor:
        for model, index in indexes:
            editor.remove_index(model, index)
    yield
    for model, index in indexes:
        began = time.perf_counter()
        with connection.schema_editor() as editor:
            editor.add_index(model, index)
        print(f"  index {index.name}: {time.perf_counter() - began:,.1f} s", file=sys.stderr)


def timed[T](what: str, work: Callable[[], T]) -> T:
    began = time.perf_counter()
    result = work()
    print(f"  {what}: {time.perf_counter() - began:,.1f} s", file=sys.stderr, flush=True)
    return result


def _chunks(rows: Iterator[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _drivers(named: list[int]) -> None:
    names = demo_names(named)
    for chunk in _chunks(iter(names.items())):
        with transaction.atomic():
            made = Driver.objects.bulk_create(Driver(driver_id=d, name=n) for d, n in chunk)
            driver_words_write(made)


def _regions(registrations: list[str]) -> dict[str, dict[str, str]]:
    groups = [VehicleGroup.objects.create(name=name) for name in REGIONS]
    rows = (
        VehicleGroupPlate(group=groups[n % len(groups)], registration=registration)
        for n, registration in enumerate(registrations)
    )
    for chunk in _chunks(rows):
        with transaction.atomic():
            VehicleGroupPlate.objects.bulk_create(chunk, ignore_conflicts=True)
    managers = {}
    whole = Permission.objects.get(codename=WHOLE_FLEET_PERMISSION.split(".")[1])
    for username, group in (("bench-whole", None), ("bench-region", groups[0])):
        password = secrets.token_urlsafe(16)
        # The whole fleet's manager administers too: the admin's lists are measured.
        user = User.objects.create_user(
            username, password=password, is_staff=group is None, is_superuser=group is None
        )
        if group is None:
            user.user_permissions.add(whole)
        else:
            VehicleGroupMember.objects.create(group=group, user=user)
        managers[username] = {"username": username, "password": password}
    scopes_changed()
    return managers


def _wordings() -> dict[str, list[int]]:
    made = {}
    for kind, texts in (
        ("fines", [infraction.description for infraction in infractions.INFRACTIONS]),
        ("notifications", list(TITLES)),
    ):
        rows = [Wording(text=text, digest=_digest(text)) for text in texts]
        Wording.objects.bulk_create(rows, ignore_conflicts=True)
        made[kind] = list(
            Wording.objects.filter(digest__in=[row.digest for row in rows]).values_list(
                "pk", flat=True
            )
        )
    return made


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _fines(
    rng: random.Random,
    count: int,
    registrations: list[str],
    drivers: list[int],
    wordings: dict[str, list[int]],
) -> list[str]:
    now = timezone.now()
    span = int(timedelta(days=365 * YEARS).total_seconds())
    texts = dict(Wording.objects.values_list("pk", "text"))
    amounts = [Decimal(tier.amount) for tier in infractions.TIERS]
    columns = (
        "id", "key", "external_id", "treated", "treated_history", "payload", "registration",
        "received_at", "updated_at", "link_frame", "link", "amount", "occurred_at",
        "driver_id", "driver_basis", "reference", "infraction_id", "indication",
        "indication_basis", "indication_due", "indication_due_basis",
    )  # fmt: skip
    # The history of who had each vehicle covers the last 90 days; in them, one fine in
    # 200 was committed while its vehicle changed hands (`fleet.services.attribution`).
    covered = now - timedelta(days=90)
    today = timezone.localdate(now)

    def fine(number: int) -> tuple[Any, ...]:
        vehicle = rng.randrange(len(registrations))
        occurred = now - timedelta(seconds=rng.randrange(span))
        # Received 10 to 40 days after, or in the last hour if that is still to come: at
        # moments of their own (the portal stamps each fine as it processes it; a million
        # received "now" at once would be one tie that every first page sorts).
        received = occurred + timedelta(days=rng.randrange(10, 40))
        if received > now:
            received = now - timedelta(seconds=rng.random() * 3600)
        reference = f"E{number:09d}"
        wording = rng.choice(wordings["fines"])
        amount = rng.choice(amounts)
        payload = {
            "id": number,
            "carPlate": registrations[vehicle],
            "autoInfracao": reference,
            "description": texts[wording],
            "occurredAt": occurred.isoformat(),
            "amount": str(amount),
        }
        document = f"https://autoridade.example/{reference}.pdf" if rng.random() < 0.7 else ""
        basis = "history" if occurred > covered else "list"
        driver: int | None = drivers[vehicle]
        if basis == "history" and number % 200 == 0:
            basis, driver = "uncertain", None
        return (
            number, f"id:{number}", str(number), rng.random() < 0.6, [], payload,
            registrations[vehicle], received, received, document,
            f"https://boletos.example/{reference}", amount, occurred, driver, basis,
            reference, wording, *_indication(rng, today),
        )  # fmt: skip

    delivery_columns = (
        "received_at", "content_type", "body", "body_size", "body_sha256", "headers",
        "status", "kind", "error", "attempts", "processed_at", "body_purged_at",
        "unknown_keys_unrecorded", "fine_id",
    )  # fmt: skip
    for chunk in _chunks(fine(number) for number in range(1, count + 1)):
        with transaction.atomic():
            _insert(Fine, columns, chunk)
            _insert(WebhookDelivery, delivery_columns, [_delivery(row, now) for row in chunk[::10]])
    _sequence_past(Fine, count)
    return [f"E{number:09d}" for number in rng.sample(range(1, count + 1), k=min(count, 20))]


def _indication(rng: random.Random, today: date) -> tuple[Any, ...]:
    """Where a fine's indication stands (`indication`, its basis, its deadline, the
    deadline's basis) on `today`: `NEEDED` for a fifth, deadlines from yesterday to 45
    days ahead; `NEEDED` past its deadline (missed, by the clock) for 4 %, deadlines 1
    to 60 days past, estimated; the rest not needed, indicated or accepted. Treated or
    not as the fine is (the queue is the untreated)."""
    draw = rng.random()
    if draw < NEEDED_SHARE:
        due = today + timedelta(days=rng.randrange(-1, 46))
        return Indication.NEEDED.value, NeedBasis.SENT.value, due, DeadlineBasis.SENT.value
    if draw < NEEDED_SHARE + MISSED_SHARE:
        due = today - timedelta(days=rng.randrange(1, 61))
        return Indication.NEEDED.value, NeedBasis.SENT.value, due, DeadlineBasis.ESTIMATED.value
    settled = (Indication.NOT_NEEDED, Indication.INDICATED, Indication.ACCEPTED)
    indication = settled[int((draw - NEEDED_SHARE - MISSED_SHARE) * 1000) % 3].value
    if indication == Indication.NOT_NEEDED:
        return indication, NeedBasis.SENT.value, None, None
    due = today - timedelta(days=int(draw * 400))
    return indication, NeedBasis.SENT.value, due, DeadlineBasis.SENT.value


def _delivery(fine: tuple[Any, ...], now: datetime) -> tuple[Any, ...]:
    """The processed delivery of the fine `fine` (a row of `_fines`), its body purged."""
    number, received = fine[0], fine[7]
    return (
        received, "", b"", 200, f"{number:064d}", {}, BODY_PURGED_STATUSES[0], "frame", "",
        1, received, now, 0, number,
    )  # fmt: skip


def _notifications(
    rng: random.Random, count: int, registrations: list[str], wordings: dict[str, list[int]]
) -> None:
    now = timezone.now()
    span = int(timedelta(days=365 * YEARS).total_seconds())
    texts = dict(Wording.objects.values_list("pk", "text"))
    columns = (
        "key", "external_id", "treated", "treated_history", "payload", "registration",
        "received_at", "updated_at", "heading_id",
    )  # fmt: skip

    def notification(number: int) -> tuple[Any, ...]:
        registration = rng.choice(registrations)
        wording = rng.choice(wordings["notifications"])
        received = now - timedelta(seconds=rng.randrange(span))
        payload = {"title": texts[wording], "carPlate": registration, "message": "…"}
        return (
            f"id:n{number}", f"n{number}", rng.random() < 0.6, [], payload, registration,
            received, received, wording,
        )  # fmt: skip

    for chunk in _chunks(notification(number) for number in range(1, count + 1)):
        with transaction.atomic():
            _insert(Notification, columns, chunk)


def _insert(model: type[Model], columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """`rows` (values of `columns`, fields' attribute names) into `model`'s table in one
    `executemany` (PostgreSQL: one COPY), each value as the database keeps it:
    `bulk_create` prepares every value of every row through each field and spends most
    of a fill's time doing it."""
    fields: list[Any] = [model._meta.get_field(name) for name in columns]
    quote = connection.ops.quote_name
    names = ", ".join(quote(field.column) for field in fields)
    marks = ", ".join(["%s"] * len(fields))
    table = quote(model._meta.db_table)
    sql = f"INSERT INTO {table} ({names}) VALUES ({marks})"  # noqa: S608 (the models' names)
    kept = [_kept_as(field) for field in fields]
    prepared = ([keep(value) for keep, value in zip(kept, row, strict=True)] for row in rows)
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.executemany(sql, list(prepared))
            return
        # PostgreSQL's COPY: a stream of rows, not a statement each.
        with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in prepared:
                copy.write_row(row)


def _kept_as(field: Any) -> Callable[[Any], Any]:
    """How the database is given a value of `field`: a moment in UTC, as SQLite keeps it
    (text) or as is; JSON as the field writes it (text, or PostgreSQL's jsonb)."""
    if field.get_internal_type() == "DateTimeField":
        if connection.vendor != "sqlite":
            return lambda value: value
        return lambda value: value and str(value.astimezone(UTC).replace(tzinfo=None))
    if field.get_internal_type() == "DateField":
        return (
            (lambda value: value and value.isoformat())
            if connection.vendor == "sqlite"
            else (lambda value: value)
        )
    if field.get_internal_type() == "JSONField":
        return lambda value: field.get_db_prep_save(value, connection)
    return lambda value: value


def _sequence_past(model: type[Model], last: int) -> None:
    """The next id PostgreSQL gives `model` after `last` (rows written with their ids)."""
    if connection.vendor == "postgresql":
        table = model._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [table, max(last, 1)]
            )


if __name__ == "__main__":
    sys.exit(main())
