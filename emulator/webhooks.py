"""Webhook events as the fleet platform pushes them (spec 2.6 and 6), made up.

`generate` makes a deterministic batch for a seed: fines (`frame`) and
notifications, each created with `treated: false` (a fine's `linkFrame`
null or a URL), some later updated (the official document arrives, the
record is treated), optionally with keys the receiver cannot know, exact
duplicates, malformed bodies and a shuffled order. It also says what a
receiver should end up with: each record's final state. Its records are
spread over the year before the clock's now, as a fleet's would be (or over a
shorter window), some fines close to a hand-over of their vehicle when
vehicles change hands (`emulator.handovers`); a fine is one of the traffic
code's infractions, at its amount (`emulator.infractions`).

`emulator.webhook_sender` sends a batch's bodies.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import string
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from typing import Any

from emulator import handovers, infractions
from emulator.clock import isoformat

MAX_COUNT = 100_000

_NOTICES = (
    ("license", "Licenciamento a vencer", "O licenciamento do veículo {plate} vence em 30 dias."),
    ("driver", "Indicação de condutor", "Indique o condutor da multa do veículo {plate}."),
    ("recall", "Recall do fabricante", "O veículo {plate} está convocado para um recall."),
    ("inspection", "Vistoria agendada", "A vistoria do veículo {plate} foi agendada."),
)
FINE_SHARE = 0.7
NO_ID_SHARE = 0.1  # records whose payload carries no id: the receiver must tell them apart
DOCUMENT_AT_CREATION = 0.4
DOCUMENT_LATER = 0.7
TREATED_LATER = 0.6
MERCOSUL_LATER = 0.25  # a fleet's old plate written as the Mercosul plate that replaced it
# Records are spread over the year before the batch (a fine's `occurredAt`, a
# notification's `createdAt`), the recent months a little denser (RECENT_BIAS > 1).
SPAN = timedelta(days=365)
RECENT_BIAS = 1.3
NEWEST = timedelta(hours=2)  # the youngest record, so that its events fit before the batch
# A window given instead of the year (`within`): from 2 hours to 10 years. Under 2 days
# its records are spread evenly, not by day.
SHORTEST_WITHIN, LONGEST_WITHIN = timedelta(hours=2), timedelta(days=3650)
EVEN_UNDER = timedelta(days=2)
# When vehicles change hands, this share of the fines about a fleet's vehicle is
# committed this close to one of its hand-overs (before or after it): who was driving?
NEAR_HANDOVER_SHARE = 1 / 3
NEAR_HANDOVER = timedelta(hours=3)
NOTICE_WITHIN = timedelta(days=30)  # a fine reaches the platform at most this long after
BRASILIA = timedelta(hours=-3)
# Fines by hour of the day, Brasília time: few at night, most in the rush hours.
_HOURS = (1, 1, 1, 1, 1, 2, 4, 7, 9, 8, 7, 7, 7, 7, 7, 8, 9, 9, 7, 5, 4, 3, 2, 1)
_OLD_PLATE = re.compile(r"[A-Z]{3}[0-9]{4}")


@dataclass(frozen=True, slots=True)
class Delivery:
    body: bytes
    role: str  # "event", "duplicate" or "malformed"
    record: str | None = None  # the key of the record an event belongs to


@dataclass(slots=True)
class Batch:
    deliveries: list[Delivery] = field(default_factory=list)
    # key -> the final state a receiver must hold: kind, id, reference, treated, linkFrame
    records: dict[str, dict[str, Any]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        roles = Counter(delivery.role for delivery in self.deliveries)
        return {
            "deliveries": len(self.deliveries),
            "events": roles["event"],
            "duplicates": roles["duplicate"],
            "malformed": roles["malformed"],
            "records": len(self.records),
        }

    def manifest(self) -> dict[str, Any]:
        """What was sent and what a receiver should end up with (`--manifest`)."""
        return {
            "counts": self.counts(),
            "records": list(self.records.values()),
            "malformed_sha256": [_sha256(d.body) for d in self.deliveries if d.role == "malformed"],
            "bodies_sha256": [_sha256(d.body) for d in self.deliveries],
        }


def generate(
    count: int,
    *,
    seed: int = 1,
    duplicates: float = 0.0,
    malformed: float = 0.0,
    shuffle: bool = False,
    extra_keys: bool = False,
    now: datetime | None = None,
    plates: Sequence[str] = (),
    within: float | None = None,
    schedule: handovers.Schedule | None = None,
) -> Batch:
    """`count` deliveries: that share of exact duplicates and of malformed bodies, the rest events.

    With `plates` (a fleet's), each record is about one of those vehicles, some
    of them far more often than others, sometimes under the Mercosul plate that
    replaced its old one (`_fleet_plate`); without, about a made-up plate.

    Records are spread over the year before `now` (`_Records.moment`), or over
    the `within` seconds before it. With `schedule` (the hand-overs of the
    vehicles of `plates`, in the same order), about a third of the fines about
    a vehicle that changes hands in that window are committed within
    NEAR_HANDOVER of one of its hand-overs, before or after it. Every
    event carries `updatedAt`: a record's first when the platform registered it
    (a notification's `createdAt`; a fine's, which follows its `occurredAt`), its
    updates later, all before the batch is sent (`sentAt`, one second apart, in
    the minute before `now`): a receiver can order a record's events whatever
    order they arrive in. The same seed and `now`, the same bytes.
    """
    if not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be 1 to {MAX_COUNT}")
    if not (0 <= duplicates < 1 and 0 <= malformed < 1 and duplicates + malformed < 1):
        raise ValueError("duplicates and malformed are shares from 0 to 1, less than 1 together")
    rng = random.Random(seed)
    wanted_duplicates, wanted_malformed = round(count * duplicates), round(count * malformed)
    wanted_events = count - wanted_duplicates - wanted_malformed
    if wanted_events + wanted_malformed == 0:
        raise ValueError("a batch of duplicates only has nothing to duplicate")
    if schedule is not None and len(schedule) != len(plates):
        raise ValueError("the schedule is not that of the fleet of these plates")
    now = now or datetime.now(UTC)
    clock = now - timedelta(seconds=count + 60)
    oldest, newest = _window(now, clock, within, count)
    records = _Records(
        rng,
        seed=seed,
        extra_keys=extra_keys,
        plates=plates,
        until=clock,
        window=(oldest, newest),
        schedule=schedule,
    )
    batch = Batch()
    originals: list[Delivery] = []
    number = 0
    while len(originals) < wanted_events:
        number += 1
        for payload, state in _record_events(records, number)[: wanted_events - len(originals)]:
            clock += timedelta(seconds=1)
            if extra_keys:
                payload["eventId"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                payload["sentAt"] = isoformat(clock)
            originals.append(Delivery(_encode(payload), "event", state["key"]))
            batch.records[state["key"]] = state
    originals += [Delivery(_malformed(rng, n, clock), "malformed") for n in range(wanted_malformed)]
    if shuffle:
        rng.shuffle(originals)
    # A duplicate follows its original, as a retry would; shuffled, it goes anywhere.
    twins = Counter(rng.randrange(len(originals)) for _ in range(wanted_duplicates))
    for position, original in enumerate(originals):
        batch.deliveries.append(original)
        batch.deliveries += [Delivery(original.body, "duplicate")] * twins[position]
    if shuffle:
        rng.shuffle(batch.deliveries)
    return batch


def _window(
    now: datetime, until: datetime, within: float | None, count: int
) -> tuple[datetime, datetime]:
    """The oldest and the newest a record's own time may be: the year before `until` but
    its last NEWEST, or the `within` seconds before `now` but what its events need."""
    if within is None:
        return until - SPAN, until - NEWEST
    if not SHORTEST_WITHIN.total_seconds() <= within <= LONGEST_WITHIN.total_seconds():
        raise ValueError("the window (within) must be 2 hours to 10 years long")
    oldest = now - timedelta(seconds=within)
    # The newest record leaves room for its notice and its updates before the batch.
    newest = until - min(NEWEST, timedelta(seconds=within) / 4)
    # Every record's time is its own second: the window holds at least one per delivery.
    if newest - oldest < timedelta(seconds=count):
        least = math.ceil((now - until + NEWEST + timedelta(seconds=count)) / timedelta(hours=1))
        raise ValueError(
            f"the window (within) is too short for {count} deliveries: give at least {least} hours"
        )
    return oldest, newest


def events_batch(payloads: Sequence[object]) -> Batch:
    """A batch of these payloads, sent as they are (the control surface's `events`)."""
    return Batch([Delivery(_encode(payload), "event") for payload in payloads])


class _Records:
    """What a batch's records are drawn from: its random numbers, the fleet's plates (a
    few vehicles far more often than most, as a fleet has its frequent offenders), and
    their times, all in `window` (oldest, newest) and before `until`."""

    def __init__(
        self,
        rng: random.Random,
        *,
        seed: int,
        extra_keys: bool,
        plates: Sequence[str],
        until: datetime,
        window: tuple[datetime, datetime],
        schedule: handovers.Schedule | None,
    ) -> None:
        self.rng, self.seed, self.extra_keys, self.until = rng, seed, extra_keys, until
        self.plates, self.schedule = plates, schedule
        self.oldest, self.newest = window
        # The vehicle ranked r (in an order drawn here) weighs 1 / (1 + 10 r / n).
        ranks = list(range(len(plates)))
        rng.shuffle(ranks)
        self._cum_weights = list(accumulate(1 / (1 + 10 * rank / len(ranks)) for rank in ranks))
        self._taken: set[datetime] = set()

    def vehicle(self) -> tuple[int | None, str]:
        """The vehicle a record is about: its place in the fleet (None for a made-up
        plate) and the plate the record names it by."""
        if not self.plates:
            return None, _plate(self.rng)
        return _fleet_plate(self.rng, self.plates, self._cum_weights)

    def moment(self, vehicle: int | None = None) -> datetime:
        """A record's own time (a fine committed at the wheel of fleet vehicle `vehicle`, a
        notification created), unique to the second, inside the window."""
        moment = None
        if (
            vehicle is not None
            and self.schedule is not None
            and self.rng.random() < NEAR_HANDOVER_SHARE
        ):
            moment = self._near_handover(vehicle)
        if moment is None:
            moment = self._spread()
        # A notification's `createdAt` tells it apart (`_final`'s reference).
        while moment in self._taken:
            moment -= timedelta(seconds=1)
            if moment < self.oldest:
                moment = self.newest
        self._taken.add(moment)
        return moment

    def _spread(self) -> datetime:
        """A time in the window: the recent months denser, mostly by day, Brasília time;
        in a window under EVEN_UNDER, anywhere in it alike."""
        rng = self.rng
        if self.newest - self.oldest < EVEN_UNDER:
            room = int((self.newest - self.oldest).total_seconds())
            return (self.oldest + timedelta(seconds=rng.randint(0, room))).replace(microsecond=0)
        span = (self.until - self.oldest).total_seconds()
        back = timedelta(seconds=round(span * rng.random() ** RECENT_BIAS))
        local = (self.until - back + BRASILIA).replace(
            hour=rng.choices(range(24), weights=_HOURS)[0],
            minute=rng.randrange(60),
            second=rng.randrange(60),
            microsecond=0,
        )
        moment = local - BRASILIA
        while moment > self.newest:
            moment -= timedelta(days=1)
        if moment < self.oldest:
            moment += timedelta(days=1)
        return moment

    def _near_handover(self, vehicle: int) -> datetime | None:
        """Up to NEAR_HANDOVER before or after one of the vehicle's hand-overs in the
        window (never on the hour itself); None when it changes hands in none."""
        assert self.schedule is not None
        first = handovers.hour_of(self.oldest + NEAR_HANDOVER) + 1
        last = handovers.hour_of(self.newest - NEAR_HANDOVER)
        hours = self.schedule.handover_hours(vehicle, first, last)
        if not hours:
            return None
        rng = self.rng
        offset = rng.randint(1, int(NEAR_HANDOVER.total_seconds())) * rng.choice((-1, 1))
        return handovers.start_of(rng.choice(hours)) + timedelta(seconds=offset)

    def notice(self, occurred: datetime) -> datetime:
        """When the platform registers a fine committed at `occurred`: ten minutes to
        NOTICE_WITHIN after, and at most halfway to `until`."""
        latest = min(NOTICE_WITHIN, (self.until - occurred) / 2)
        return occurred + timedelta(seconds=self.rng.randint(600, int(latest.total_seconds())))

    def later(self, start: datetime, count: int) -> list[datetime]:
        """`count` distinct whole seconds after `start` and up to `until`, in order."""
        first, last = int(start.timestamp()) + 1, int(self.until.timestamp())
        seconds = sorted(self.rng.sample(range(first, last + 1), count))
        return [datetime.fromtimestamp(second, UTC) for second in seconds]


def _record_events(records: _Records, number: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """A record's events in order, each with the record's state after it."""
    rng = records.rng
    vehicle, plate = records.vehicle()
    has_id = rng.random() >= NO_ID_SHARE
    if rng.random() < FINE_SHARE:
        infraction = infractions.infraction(rng)
        occurred = records.moment(vehicle)
        created = records.notice(occurred)
        reference = f"E{records.seed % 100:02d}{number:07d}"
        data: dict[str, Any] = {
            "carPlate": plate,
            "autoInfracao": reference,
            "description": infraction.description,
            "infractionCode": infraction.code,
            "occurredAt": isoformat(occurred),
            "amount": infraction.amount,
            "createdAt": isoformat(created),
        }
        if records.extra_keys:
            city, uf = infractions.place(rng, plate)
            tier = infraction.tier
            data |= {"severity": tier.severity, "points": tier.points, "city": city, "state": uf}
            data |= infractions.notice_facts(reference, city, uf, created.date())
            data["indicationRequired"] = infraction.driver_conduct
        kind, key_id = "frame", 100_000 + number
        document = f"https://autoridade.example/autos/{reference}.pdf"
        link_frame = document if rng.random() < DOCUMENT_AT_CREATION else None
        links: dict[str, Any] = {
            "linkFrame": link_frame,
            "link": f"https://boletos.example/{reference}",
        }
        updates: list[dict[str, Any]] = []
        if link_frame is None and rng.random() < DOCUMENT_LATER:
            updates.append({"linkFrame": document})
        if rng.random() < TREATED_LATER:
            updates.append({"treated": True})
        rng.shuffle(updates)
    else:
        topic, title, message = rng.choice(_NOTICES)
        created = records.moment()
        reference = isoformat(created)
        data = {
            "type": topic,
            "title": title,
            "message": message.format(plate=plate),
            "carPlate": plate,
            "createdAt": reference,
        }
        if records.extra_keys:
            data["channel"] = rng.choice(("app", "email", "sms"))
        kind, key_id, links = "notification", 500_000 + number, {}
        updates = [{"treated": True}] if rng.random() < TREATED_LATER else []
    if has_id:
        data = {"id": key_id, **data}
    state: dict[str, Any] = {"treated": False} | links
    events = []
    times = [created, *records.later(created, len(updates))]
    for change, moment in zip([{}, *updates], times, strict=True):
        state = state | change
        payload = _payload(rng, kind, data, state)
        payload[kind]["updatedAt"] = isoformat(moment)
        events.append((payload, _final(kind, key_id, has_id, reference, state)))
    return events


def _payload(
    rng: random.Random, kind: str, data: dict[str, Any], state: dict[str, Any]
) -> dict[str, Any]:
    event = {**data, "treated": state["treated"]}
    if kind != "frame":
        return {kind: event}
    links = {name: state[name] for name in ("linkFrame", "link")}
    # Spec 2.6 shows the links beside `frame`; senders also put them inside it.
    if rng.random() < 0.5:
        return {kind: event | links}
    return {kind: event, **links}


def _final(
    kind: str, key_id: int, has_id: bool, reference: str, state: dict[str, Any]
) -> dict[str, Any]:
    return {
        "key": f"{kind}:{reference}",
        "kind": kind,
        "id": str(key_id) if has_id else None,
        "reference": reference,
        "treated": state["treated"],
        "linkFrame": state.get("linkFrame"),
    }


def _malformed(rng: random.Random, number: int, moment: datetime) -> bytes:
    """A body no receiver can turn into a record; the four kinds in turn."""
    fake = {"id": 900_000 + number, "carPlate": _plate(rng), "updatedAt": isoformat(moment)}
    shape = number % 4
    if shape == 0:  # cut short, as by a dropped connection on the sender's side
        whole = _encode({"frame": fake | {"treated": False}, "link": "https://boletos.example/x"})
        return whole[: len(whole) // 2]
    if shape == 1:
        return f"id={fake['id']}&treated=false".encode()
    if shape == 2:  # the spec says never null
        return _encode({"frame": fake | {"treated": None}})
    return _encode({"notification": fake})  # `treated` missing


def _fleet_plate(
    rng: random.Random, plates: Sequence[str], cum_weights: Sequence[float]
) -> tuple[int, str]:
    """One of the fleet's vehicles (its place) and its plate; an old one (ABC1234) now
    and then as the Mercosul plate that replaced it (ABC1C34: the fifth character's
    digit as a letter, 0 = A), as the authorities write it once the vehicle has its
    new plate."""
    index = rng.choices(range(len(plates)), cum_weights=cum_weights)[0]
    plate = plates[index]
    if _OLD_PLATE.fullmatch(plate) and rng.random() < MERCOSUL_LATER:
        return index, f"{plate[:4]}{string.ascii_uppercase[int(plate[4])]}{plate[5:]}"
    return index, plate


def _plate(rng: random.Random) -> str:
    letters = "".join(rng.choices(string.ascii_uppercase, k=3))
    digits = "".join(rng.choices(string.digits, k=4))
    if rng.random() < 0.5:
        return f"{letters}{digits}"
    return f"{letters}{digits[0]}{rng.choice(string.ascii_uppercase)}{digits[2:]}"


def _encode(payload: object) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
