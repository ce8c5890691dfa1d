"""The soak's history check: the portal's history of who had each vehicle, written by the
refreshes of every host, against the emulator's own record of its hand-overs.

The emulator runs with its vehicles changing hands (`--handovers`: on whole hours of its
clock). When the traffic starts, its clock is moved (`place_handovers`) so that a whole
hour falls `at` seconds into the traffic: some hundred vehicles change hands while the
hosts refresh the list. At the end (`history_report`), with E(t) = t + the offset (the
emulator's moment of the portal's moment t): an observation the portal stamped at T read
the answer to one of the emulator's `list-cars` calls answered 200 in the `slack` seconds
before T, since the clock was moved (the emulator notes when it answers each call):
the earliest and latest of those bound when it saw what it saw. Then:

- the periods of a vehicle follow each other (each ends where the next begins, naming
  it), one open at most, no two alike (a period written twice would show here);
- the observations are numbered 1, 2, 3 … without a gap or a repeat, in time order;
- every hand-over the emulator made between the first and the last observation lies in
  the window of a period's end (after the answer read at its last sight, by the answer
  read at the next driver's first), from that period's driver to the next's; none lies
  inside a period.

Each failure is a difference; the soak fails unless there are none.
"""

from __future__ import annotations

import itertools
import math
import time
from bisect import bisect_left, bisect_right
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any, NamedTuple

import requests

from fleet import plates

_SHOWN = 10  # differences printed, at most


class Placed(NamedTuple):
    """The emulator's clock moved by `offset` seconds, the move answered at `at` (epoch)."""

    offset: float
    at: float


def place_handovers(emulator_url: str, *, at: float) -> Placed:
    """Move the emulator's clock ahead so that a whole hour of it falls `at` seconds from
    now."""
    target = time.time() + at
    offset = math.ceil(target / 3600) * 3600 - target
    response = requests.post(
        f"{emulator_url}/_emulator/clock", json={"advance": offset}, timeout=10
    )
    response.raise_for_status()
    return Placed(offset, time.time())


def portal_state() -> dict[str, Any]:
    """The history as the portal's database holds it (in a configured Django process)."""
    from fleet.models import DriverObservation, DriverSpan

    return {
        "observations": [
            [seq, at.timestamp()]
            for seq, at in DriverObservation.objects.order_by("seq").values_list("seq", "at")
        ],
        "spans": [
            [
                registration,
                driver,
                first.timestamp(),
                last.timestamp() if last else None,
                after.timestamp() if after else None,
                previous_driver,
                previous_seen.timestamp() if previous_seen else None,
            ]
            for registration, driver, first, last, after, previous_driver, previous_seen in (
                DriverSpan.objects.order_by("registration", "first_seen").values_list(
                    "registration",
                    "driver_id",
                    "first_seen",
                    "last_seen",
                    "next_seen",
                    "previous_driver_id",
                    "previous_seen",
                )
            )
        ],
    }


def history_report(
    state: dict[str, Any], *, emulator_url: str, placed: Placed, slack: float
) -> int:
    """Print the check; how many differences."""
    observations, spans = state["observations"], state["spans"]
    print("\n== Who had each vehicle (the history against the emulator's hand-overs) ==")
    if not observations:
        print("  no observation of the vehicle list: nothing to check (a difference)")
        return 1
    answers = requests.get(
        f"{emulator_url}/_emulator/answers", params={"route": "GET /key/list-cars"}, timeout=10
    ).json()
    answered = Answered(
        sorted(a["at"] for a in answers if a["status"] == 200 and a["at"] >= placed.at),
        offset=placed.offset,
        slack=slack,
    )
    first, latest = answered.latest(observations[0][1]), answered.earliest(observations[-1][1])
    handovers = _handovers(emulator_url, since=first, until=latest)
    differences = _observations_differ(observations)
    by_vehicle: dict[str, list[list[Any]]] = defaultdict(list)
    for span in spans:
        by_vehicle[span[0]].append(span)
    differences += _periods_differ(by_vehicle)
    last_seen = observations[-1][1]
    differences += _handovers_differ(by_vehicle, handovers, answered, first, latest, last_seen)
    closed = sum(1 for span in spans if span[4] is not None)
    print(
        f"  {len(observations)} observations by the hosts, {len(spans):,} periods of "
        f"{len(by_vehicle):,} vehicles, {closed} ended; the emulator made {len(handovers)} "
        f"hand-overs meanwhile; {len(differences)} difference(s)"
    )
    for difference in differences[:_SHOWN]:
        print(f"  DIFFERENCE: {difference}")
    return len(differences)


class Answered:
    """When, by the emulator's clock, an observation stamped T was answered: between the
    earliest and the latest 200 answer in the `slack` seconds before T."""

    def __init__(self, answers: list[float], *, offset: float, slack: float) -> None:
        self.answers, self.offset, self.slack = answers, offset, slack

    def _around(self, stamped: float) -> list[float]:
        low = bisect_left(self.answers, stamped - self.slack)
        high = bisect_right(self.answers, stamped)
        return self.answers[low:high] or [stamped - self.slack, stamped]

    def earliest(self, stamped: float) -> float:
        return self._around(stamped)[0] + self.offset

    def latest(self, stamped: float) -> float:
        return self._around(stamped)[-1] + self.offset


def _handovers(
    emulator_url: str, *, since: float, until: float
) -> list[tuple[str, float, int, int]]:
    response = requests.get(
        f"{emulator_url}/_emulator/handovers",
        params={"since": _iso(since - 1), "until": _iso(until)},
        timeout=60,
    )
    response.raise_for_status()
    return [
        (
            plates.registration(item["plate"]),
            datetime.fromisoformat(item["at"].replace("Z", "+00:00")).timestamp(),
            item["from"],
            item["to"],
        )
        for item in response.json()["handovers"]
    ]


def _observations_differ(observations: list[list[Any]]) -> list[str]:
    found = []
    numbers = [seq for seq, _at in observations]
    if numbers != list(range(1, len(numbers) + 1)):
        found.append(f"observations numbered {numbers[:5]}…, not 1, 2, 3 …")
    moments = [at for _seq, at in observations]
    if any(later <= earlier for earlier, later in itertools.pairwise(moments)):
        found.append("observations not in time order")
    return found


def _periods_differ(by_vehicle: dict[str, list[list[Any]]]) -> list[str]:
    found = []
    for registration, periods in by_vehicle.items():
        if sum(1 for period in periods if period[4] is None) > 1:
            found.append(f"{registration}: more than one open period")
        for period, following in itertools.pairwise(periods):
            if (period[4], period[1], period[3]) != (following[2], following[5], following[6]):
                found.append(f"{registration}: a period does not end where the next begins")
        if periods[-1][4] is not None:
            found.append(f"{registration}: its last period ended, none follows")
    return found


def _handovers_differ(
    by_vehicle: dict[str, list[list[Any]]],
    handovers: list[tuple[str, float, int, int]],
    answered: Answered,
    first: float,
    latest: float,
    last_seen: float,
) -> list[str]:
    """`first`, `latest`: the emulator's moments the history covers surely (after the
    first observation's answer, by the last's)."""
    found = []
    made: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
    for registration, at, before, after in handovers:
        made[registration].append((at, before, after))
    explained: set[tuple[str, float]] = set()
    for registration, periods in by_vehicle.items():
        mine = made.get(registration, [])
        for number, period in enumerate(periods):
            _vehicle, driver, began, last, after, _previous, _previous_seen = period
            following = periods[number + 1] if number + 1 < len(periods) else None
            next_driver = following[1] if following is not None else None
            seen_from = answered.latest(began)
            seen_to = answered.earliest(last_seen if after is None else last)
            if any(seen_from < h[0] <= seen_to for h in mine):
                found.append(f"{registration}: changed hands inside a period of {driver}")
            if after is None:
                continue
            window = [h for h in mine if seen_to < h[0] <= answered.latest(after)]
            if not window:
                found.append(f"{registration}: a period ended with no hand-over in its window")
            elif window[0][1] != driver or window[-1][2] != next_driver:
                found.append(
                    f"{registration}: handed from {window[0][1]} to {window[-1][2]}, "
                    f"the history says {driver} to {next_driver}"
                )
            explained.update((registration, h[0]) for h in window)
    for registration, at, _before, _after in handovers:
        surely = first < at <= latest and registration in by_vehicle
        if surely and (registration, at) not in explained:
            found.append(f"{registration}: a hand-over at {_iso(at)} is in no period's end")
    return found


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
