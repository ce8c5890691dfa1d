"""The emulator's webhook sender: what it makes up, and how it sends it (CLI and control surface).

A small receiver stands in for the portal here: these tests check the
sender, not the portal's handling (tests/views/test_webhooks.py does that).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from emulator.fleet import generate_vehicles
from emulator.handovers import Schedule, hour_of, start_of
from emulator.webhooks import generate
from tests.conftest import ROOT, Emulator


class Receiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: list[bytes] = []
        self.paths: set[str] = set()
        self.fail_first = 0  # answer 503 to this many requests first
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/webhooks/fleet/some-token/"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            failing = self.server.fail_first > 0
            self.server.fail_first -= failing
            if not failing:
                self.server.bodies.append(body)
                self.server.paths.add(self.path)
        status = 503 if failing else 200
        assert self.headers["Content-Type"] == "application/json"
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def parsed(body: bytes) -> Any:
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def event_of(payload: Any) -> Any:
    return payload.get("frame") or payload.get("notification")


def test_the_same_seed_makes_the_same_batch_and_another_seed_another():
    # The events' times come from the clock: the same moment, the same bytes.
    now = datetime(2026, 11, 22, 12, tzinfo=UTC)
    assert generate(200, seed=3, duplicates=0.2, now=now).deliveries == (
        generate(200, seed=3, duplicates=0.2, now=now).deliveries
    )
    assert generate(200, seed=3, now=now).deliveries != generate(200, seed=4, now=now).deliveries


def test_the_shares_of_duplicates_and_malformed_are_as_asked():
    batch = generate(1000, seed=1, duplicates=0.2, malformed=0.05, shuffle=True)

    assert batch.counts() | {"records": 0} == {
        "deliveries": 1000,
        "events": 750,
        "duplicates": 200,
        "malformed": 50,
        "records": 0,
    }
    originals = {d.body for d in batch.deliveries if d.role != "duplicate"}
    assert all(d.body in originals for d in batch.deliveries if d.role == "duplicate")


def test_new_records_are_untreated_then_updates_flip_treated_and_fill_link_frame():
    batch = generate(2000, seed=2)
    firsts: dict[Any, Any] = {}
    for delivery in batch.deliveries:
        payload = parsed(delivery.body)
        event = event_of(payload)
        first = firsts.setdefault(delivery.record, payload)
        if first is payload:
            assert event["treated"] is False
    fines = [p for p in firsts.values() if "frame" in p]
    link_frames = [event_of(p).get("linkFrame", p.get("linkFrame")) for p in fines]
    assert None in link_frames
    assert any(link and link.startswith("https://") for link in link_frames)
    finals = list(batch.records.values())
    assert any(r["treated"] for r in finals)
    assert any(
        r["kind"] == "frame" and r["linkFrame"] and not _created_with(r, fines) for r in finals
    )
    assert any(r["id"] is None for r in finals), "some records carry no id"
    assert {r["kind"] for r in finals} == {"frame", "notification"}


def _created_with(record: dict[str, Any], fines: list[Any]) -> bool:
    for payload in fines:
        if event_of(payload)["autoInfracao"] == record["reference"]:
            return bool(event_of(payload).get("linkFrame", payload.get("linkFrame")))
    return False


def test_events_carry_their_time_in_order_and_links_at_either_place():
    batch = generate(500, seed=5)
    times: dict[Any, list[str]] = {}
    places = set()
    for delivery in batch.deliveries:
        payload = parsed(delivery.body)
        times.setdefault(delivery.record, []).append(event_of(payload)["updatedAt"])
        if "frame" in payload:
            places.add("inside" if "linkFrame" in payload["frame"] else "top level")
    assert all(stamps == sorted(set(stamps)) for stamps in times.values())
    assert places == {"inside", "top level"}


def test_extra_keys_are_added_when_asked():
    plain = {key for d in generate(100, seed=1).deliveries for key in parsed(d.body)}
    extra = generate(100, seed=1, extra_keys=True).deliveries
    assert plain <= {"frame", "notification", "linkFrame", "link"}
    assert {"eventId", "sentAt"} <= {key for d in extra for key in parsed(d.body)}
    inner = {key for d in extra for key in event_of(parsed(d.body))}
    assert {"severity", "points", "channel"} <= inner


def test_malformed_bodies_cannot_become_records():
    batch = generate(100, seed=1, malformed=0.2)
    for delivery in (d for d in batch.deliveries if d.role == "malformed"):
        payload = parsed(delivery.body)
        assert payload is None or event_of(payload).get("treated") is None


def test_the_command_sends_every_delivery_and_writes_a_manifest(receiver, tmp_path):
    manifest = tmp_path / "manifest.json"

    completed = subprocess.run(
        [
            sys.executable, "-m", "emulator", "send-webhooks", "--url", receiver.url,
            "--count", "300", "--duplicates", "0.2", "--malformed", "0.05", "--shuffle",
            "--extra-keys", "--concurrency", "4", "--manifest", str(manifest),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr
    assert "Sent 300 deliveries to http://127.0.0.1:" in completed.stdout
    assert "some-token" not in completed.stdout + completed.stderr
    assert "200 x 300" in completed.stdout
    sent = json.loads(manifest.read_text())
    assert sent["counts"]["duplicates"] == 60
    assert sorted(hashlib.sha256(b).hexdigest() for b in receiver.bodies) == sorted(
        sent["bodies_sha256"]
    )
    assert receiver.paths == {"/webhooks/fleet/some-token/"}


def test_the_command_retries_a_5xx(receiver):
    receiver.fail_first = 2

    completed = subprocess.run(
        [sys.executable, "-m", "emulator", "send-webhooks", "--url", receiver.url, "--json",
         "--count", "5", "--concurrency", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    summary = json.loads(completed.stdout)
    assert (summary["statuses"], summary["retries"]) == ({"200": 5}, 2)
    assert len(receiver.bodies) == 5


def test_the_command_refuses_nonsense():
    completed = subprocess.run(
        [sys.executable, "-m", "emulator", "send-webhooks", "--url", "http://127.0.0.1:9/",
         "--duplicates", "0.7", "--malformed", "0.5"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert completed.returncode == 2
    assert "less than 1 together" in completed.stderr


def test_the_control_surface_sends_generated_events(emulator: Emulator, receiver):
    answer = emulator.control("POST", "webhooks", url=receiver.url, count=20, duplicates=0.1)

    assert (answer["deliveries"], answer["duplicates"], answer["statuses"]) == (20, 2, {"200": 20})
    assert len(receiver.bodies) == 20
    assert {record["kind"] for record in answer["records"]} <= {"frame", "notification"}


def test_the_control_surface_sends_given_payloads_as_they_are(emulator: Emulator, receiver):
    payloads = [{"frame": {"id": 1, "treated": False}}, {"anything": [1, 2]}]

    emulator.control("POST", "webhooks", url=receiver.url, events=payloads)

    assert [json.loads(body) for body in receiver.bodies] == payloads


@pytest.mark.parametrize(
    "body",
    [
        {"url": "ftp://x"},
        {"url": "http://127.0.0.1:9/", "count": "ten"},
        {"url": "http://x/", "events": []},
    ],
)
def test_the_control_surface_refuses_nonsense(emulator: Emulator, body):
    response = requests.post(f"{emulator.url}/_emulator/webhooks", json=body, timeout=10)

    assert response.status_code == 400
    assert response.json()["error"]


def as_mercosul(plate: str) -> str:
    return f"{plate[:4]}{chr(ord('A') + int(plate[4]))}{plate[5:]}" if plate[4].isdigit() else plate


def test_records_about_a_fleet_name_its_vehicles_now_and_then_by_their_new_plate():
    fleet = [f"ABC{n:04d}" for n in range(40)] + [f"XYZ1A{n:02d}" for n in range(40)]

    batch = generate(300, seed=3, plates=fleet)

    named = [event_of(parsed(delivery.body))["carPlate"] for delivery in batch.deliveries]
    old = {plate for plate in fleet if plate[4].isdigit()}
    assert set(named) <= set(fleet) | {as_mercosul(plate) for plate in old}
    assert set(named) & {as_mercosul(plate) for plate in old}  # some under their new plate
    assert set(named) & old  # some still under their old one


def test_the_command_and_the_control_surface_name_the_emulators_vehicles(
    emulator: Emulator, receiver
):
    fleet = {vehicle["car_plate"] for vehicle in emulator.vehicles()}
    known = fleet | {as_mercosul(plate) for plate in fleet}

    emulator.control("POST", "webhooks", url=receiver.url, count=30)
    completed = subprocess.run(
        [sys.executable, "-m", "emulator", "send-webhooks", "--url", receiver.url,
         "--count", "30", "--vehicles", "200", "--fleet-seed", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr
    named = {event_of(parsed(body))["carPlate"] for body in receiver.bodies}
    assert len(receiver.bodies) == 60
    assert named <= known


# CTB art. 258: leve, média, grave, gravíssima, and the gravíssima 2, 3, 5 and 10 times.
TIERS = {
    "88.38": "leve",
    "130.16": "média",
    "195.23": "grave",
    "293.47": "gravíssima",
    "586.94": "gravíssima",
    "880.41": "gravíssima",
    "1467.35": "gravíssima",
    "2934.70": "gravíssima",
}
NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def last_months(now: datetime, count: int) -> list[str]:
    """`count` months up to `now`'s, as `YYYY-MM`."""
    months, year, month = [], now.year, now.month
    for _ in range(count):
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return months


def fleet_fines(count: int = 1000, **options: Any) -> list[Any]:
    """The fines' events of a batch about the 500 vehicles of `make run`'s emulator."""
    plates = [vehicle.car_plate for vehicle in generate_vehicles(500, 1)]
    batch = generate(count, seed=1, now=NOW, plates=plates, **options)
    payloads = [parsed(delivery.body) for delivery in batch.deliveries]
    return [payload["frame"] for payload in payloads if "frame" in payload]


def test_fines_are_spread_over_the_last_twelve_months_of_the_clock():
    fines = fleet_fines()
    firsts = {fine["autoInfracao"]: moment(fine["occurredAt"]) for fine in fines}

    assert len(firsts) > 300
    assert all(NOW - timedelta(days=366) < when < NOW for when in firsts.values())
    by_month = Counter(when.strftime("%Y-%m") for when in firsts.values())
    twelve = last_months(NOW, 12)
    assert sum(1 for month in twelve if by_month[month]) >= 10
    # The recent half of the year a little busier than the older half.
    assert sum(by_month[month] for month in twelve[1:7]) > sum(by_month[m] for m in twelve[7:])


def test_a_records_times_follow_each_other_and_none_is_after_the_clock():
    batch = generate(600, seed=2, now=NOW, extra_keys=True)
    events: dict[Any, list[Any]] = {}
    for delivery in batch.deliveries:
        payload = parsed(delivery.body)
        events.setdefault(delivery.record, []).append(event_of(payload))
        assert moment(payload["sentAt"]) < NOW
    for record in events.values():
        created = moment(record[0]["createdAt"])
        stamps = [moment(event["updatedAt"]) for event in record]
        assert stamps[0] == created < NOW - timedelta(hours=1)
        assert stamps == sorted(set(stamps))
        assert stamps[-1] < NOW
        if "occurredAt" in record[0]:
            assert moment(record[0]["occurredAt"]) < created
    # Each record's first event dates from when it was made, not from the batch.
    assert len({record[0]["updatedAt"][:7] for record in events.values()}) >= 10


def test_amounts_are_the_traffic_codes_and_each_infraction_has_one_tier():
    fines = fleet_fines(extra_keys=True)

    assert {fine["amount"] for fine in fines} <= TIERS.keys()
    assert {"88.38", "2934.70"} <= {fine["amount"] for fine in fines}
    assert all(TIERS[fine["amount"]] == fine["severity"] for fine in fines)
    points = {"leve": 3, "média": 4, "grave": 5, "gravíssima": 7}
    assert all(points[fine["severity"]] == fine["points"] for fine in fines)
    infractions = {(f["description"], f["infractionCode"], f["amount"]) for f in fines}
    assert len(infractions) >= 15
    assert len({description for description, _code, _amount in infractions}) == len(infractions)
    assert all(re.fullmatch(r"\d{3}-\d{2}", code) for _d, code, _a in infractions)
    recusal = [a for description, _c, a in infractions if "etilômetro" in description]
    assert recusal == ["2934.70"]  # refusing the breathalyser: gravíssima ten times


def test_a_notice_says_who_issued_it_and_most_say_their_deadlines():
    fines = fleet_fines(extra_keys=True)

    assert all(fine["noticeDate"] == fine["createdAt"][:10] for fine in fines)
    assert {fine["authority"].split("-")[0].split(" ")[0] for fine in fines} == {
        "DETRAN",
        "PRF",
        "Prefeitura",
    }
    dated = [fine for fine in fines if "indicationDeadline" in fine]
    assert 0.6 < len(dated) / len(fines) < 0.8  # the others leave the portal to estimate
    for fine in dated:
        notice = date.fromisoformat(fine["noticeDate"])
        deadline = date.fromisoformat(fine["indicationDeadline"])
        assert 30 <= (deadline - notice).days <= 45
        assert date.fromisoformat(fine["paymentDueDate"]) >= deadline
    # The owner's own infraction (an unlicensed vehicle) has no driver to indicate.
    required = {fine["infractionCode"]: fine["indicationRequired"] for fine in fines}
    assert required.pop("659-92") is False
    assert set(required.values()) == {True}


def test_fines_name_varied_vehicles_of_both_plate_formats_and_places():
    fines = fleet_fines(extra_keys=True)

    named = Counter(fine["carPlate"] for fine in fines)
    assert len(named) > 100
    assert any(re.fullmatch(r"[A-Z]{3}\d{4}", plate) for plate in named)
    assert any(re.fullmatch(r"[A-Z]{3}\d[A-Z]\d{2}", plate) for plate in named)
    assert named.most_common(1)[0][1] >= 4  # some vehicles are fined again and again
    assert len({fine["state"] for fine in fines}) >= 10
    assert len({fine["city"] for fine in fines}) >= 15


def test_the_control_surface_dates_its_events_by_the_emulators_clock(emulator: Emulator, receiver):
    emulator.control("POST", "clock", set="2031-06-15T12:00:00Z")
    moved = datetime(2031, 6, 15, 12, tzinfo=UTC)

    emulator.control("POST", "webhooks", url=receiver.url, count=60)

    events = [event_of(parsed(body)) for body in receiver.bodies]
    records = [event.get("occurredAt") or event["createdAt"] for event in events]
    assert all(moved - timedelta(days=366) < moment(when) < moved for when in records)
    assert all(moment(event["updatedAt"]) < moved for event in events)
    assert len({when[:7] for when in records}) >= 6


# A window instead of the year, and fines around hand-overs


def test_without_the_new_options_the_batch_is_the_same_bytes_as_before():
    plates = [vehicle.car_plate for vehicle in generate_vehicles(500, 1)]

    batch = generate(300, seed=1, now=NOW, plates=plates, extra_keys=True, duplicates=0.1)

    # The notice's facts (full mode) are drawn from the notice number alone: without
    # them, the same bytes as before; with them, the same draws of the batch's numbers.
    sent = b"".join(without_notice_facts(delivery.body) for delivery in batch.deliveries)
    assert hashlib.sha256(sent).hexdigest() == (
        "d96d6deb7e856f7710eecf101e3aa1acfdb09d3d5340a9c8d7034eab5574c66d"
    )


NOTICE_FACTS = ("authority", "noticeDate", "indicationDeadline", "paymentDueDate")


def without_notice_facts(body: bytes) -> bytes:
    """`body` without the keys the notice's facts add to a fine, as the emulator writes it."""
    try:
        payload = json.loads(body)
    except ValueError:
        return body  # a malformed delivery, as sent
    frame = payload.get("frame") if isinstance(payload, dict) else None
    if not isinstance(frame, dict) or "noticeDate" not in frame:
        return body
    for name in (*NOTICE_FACTS, "indicationRequired"):
        frame.pop(name, None)
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def own_times(batch: Any) -> list[datetime]:
    """Each event's record's own time: a fine's `occurredAt`, a notification's `createdAt`."""
    events = [event_of(parsed(delivery.body)) for delivery in batch.deliveries]
    return [moment(event.get("occurredAt") or event["createdAt"]) for event in events]


@pytest.mark.parametrize("hours", [2, 6, 72, 24 * 30])
def test_within_keeps_every_record_inside_the_window(hours: int) -> None:
    plates = [vehicle.car_plate for vehicle in generate_vehicles(500, 1)]

    batch = generate(600, seed=4, now=NOW, plates=plates, within=hours * 3600)

    times = own_times(batch)
    assert all(NOW - timedelta(hours=hours) <= when < NOW for when in times)
    # Spread over the window (its last part left for the events that follow a record).
    assert min(times) < NOW - timedelta(hours=hours * 0.7)
    assert max(times) > NOW - timedelta(hours=hours * 0.5)
    events = [event_of(parsed(delivery.body)) for delivery in batch.deliveries]
    assert all(moment(event["updatedAt"]) < NOW for event in events)


@pytest.mark.parametrize(
    ("count", "hours", "says"),
    [(10, 1, "2 hours to 10 years"), (20_000, 3, "too short for 20000 deliveries")],
)
def test_a_window_that_cannot_hold_the_batch_is_refused(count: int, hours: int, says: str):
    with pytest.raises(ValueError, match=says):
        generate(count, seed=1, now=NOW, within=hours * 3600)


def fleet_index(plates: list[str]) -> dict[str, int]:
    """A fine's `carPlate` -> its vehicle's place in the fleet (the new plate of an old one too)."""
    found = {as_mercosul(plate): index for index, plate in enumerate(plates)}
    return found | {plate: index for index, plate in enumerate(plates)}


def sides_of_handovers(
    fines: list[Any], places: dict[str, int], handovers_of: Any
) -> tuple[int, int]:
    """How many fines were committed within 3 hours before, and after, one of their
    vehicle's hand-overs (`handovers_of(place, around)`: that vehicle's hand-over times)."""
    before = after = 0
    for fine in fines:
        occurred = moment(fine["occurredAt"])
        near = handovers_of(places[fine["carPlate"]], occurred)
        before += any(timedelta(0) < at - occurred <= timedelta(hours=3) for at in near)
        after += any(timedelta(0) < occurred - at <= timedelta(hours=3) for at in near)
    return before, after


def test_with_handovers_a_third_of_the_fines_fall_around_a_handover_on_either_side():
    vehicles = generate_vehicles(500, 1)
    plates = [vehicle.car_plate for vehicle in vehicles]
    schedule = Schedule(1, [vehicle.driver_id for vehicle in vehicles])
    places = fleet_index(plates)

    def handovers_of(place: int, around: datetime) -> list[datetime]:
        hours = schedule.handover_hours(place, hour_of(around) - 3, hour_of(around) + 4)
        return [start_of(hour) for hour in hours]

    near, far = (
        [
            parsed(d.body)["frame"]
            for d in generate(1500, seed=1, now=NOW, plates=plates, schedule=given).deliveries
            if "frame" in parsed(d.body)
        ]
        for given in (schedule, None)
    )
    before, after = sides_of_handovers(near, places, handovers_of)
    by_chance = sum(sides_of_handovers(far, places, handovers_of))

    assert before > 50
    assert after > 50
    assert (before + after) / len(near) > 0.3 > 0.2 > by_chance / len(far)
    again = generate(1500, seed=1, now=NOW, plates=plates, schedule=schedule).deliveries
    assert [parsed(d.body)["frame"] for d in again if "frame" in parsed(d.body)] == near


def test_the_control_surface_puts_fines_around_its_vehicles_handovers_within_the_window(
    emulator: Emulator, receiver
):
    emulator.control("POST", "clock", set=NOW.isoformat())
    emulator.switch_handovers(True)
    plates = [vehicle["car_plate"] for vehicle in emulator.vehicles()]
    since = NOW - timedelta(hours=73)
    record = emulator.handovers(since.isoformat(), (NOW + timedelta(hours=1)).isoformat())

    emulator.control("POST", "webhooks", url=receiver.url, count=300, within_hours=72)

    events = [event_of(parsed(body)) for body in receiver.bodies]
    assert all(
        NOW - timedelta(hours=72) <= moment(event.get("occurredAt") or event["createdAt"]) < NOW
        for event in events
    )
    places = fleet_index(plates)
    assert_on_both_sides(events, record, places)


def assert_on_both_sides(
    events: list[dict[str, Any]], record: list[dict[str, Any]], places: dict[str, int]
) -> None:
    """Some of the fines among `events` fall before a hand-over of `record`, some after."""
    at_by_place: dict[int, list[datetime]] = {}
    for handover in record:
        at_by_place.setdefault(places[handover["plate"]], []).append(moment(handover["at"]))
    fines = [event for event in events if "occurredAt" in event]
    before, after = sides_of_handovers(
        fines, places, lambda place, _around: at_by_place.get(place, [])
    )
    assert before > 0
    assert after > 0


def test_the_control_surface_refuses_a_window_it_cannot_use(emulator: Emulator):
    response = requests.post(
        f"{emulator.url}/_emulator/webhooks",
        json={"url": "http://127.0.0.1:9/", "within_hours": 0.5},
        timeout=10,
    )

    assert response.status_code == 400
    assert "2 hours" in response.json()["error"]


def test_the_command_puts_fines_around_the_handovers_of_the_emulator_it_names(
    emulator: Emulator, receiver
):
    completed = subprocess.run(
        [sys.executable, "-m", "emulator", "send-webhooks", "--url", receiver.url,
         "--count", "300", "--vehicles", "200", "--fleet-seed", "1", "--handovers",
         "--within-hours", "48"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    ended = datetime.now(UTC)

    assert completed.returncode == 0, completed.stderr
    events = [event_of(parsed(body)) for body in receiver.bodies]
    times = [moment(event.get("occurredAt") or event["createdAt"]) for event in events]
    assert all(ended - timedelta(hours=48, minutes=1) <= when < ended for when in times)
    # The emulator serving those vehicles (200, seed 1) lists the same hand-overs.
    since = (ended - timedelta(hours=49)).isoformat()
    record = emulator.handovers(since, ended.isoformat())
    places = fleet_index([vehicle["car_plate"] for vehicle in emulator.vehicles()])
    assert_on_both_sides(events, record, places)


def test_the_command_needs_a_fleet_for_handovers():
    completed = subprocess.run(
        [sys.executable, "-m", "emulator", "send-webhooks", "--url", "http://127.0.0.1:9/",
         "--handovers"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert completed.returncode == 2
    assert "--handovers needs --vehicles" in completed.stderr
