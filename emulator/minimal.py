"""Minimal mode: answers with exactly what the spec promises, nothing more.

The portal's client must need nothing the spec does not promise. In minimal
mode the API answers drop every member the spec leaves unnamed (ids, plates,
dates, `traceId` on successes), spell the members whose names the spec does
not give (inside `document` and `failure`, the vehicle view's two) one of the
ways the portal's client accepts, and add members no client can know yet.
The spellings and the additions are chosen from a spelling seed, so a failing
run can be repeated. Errors keep their specified bodies; the control surface
never changes.
"""

from __future__ import annotations

import random
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from emulator.messages import encode_json

if TYPE_CHECKING:
    from emulator.fleet import Vehicle

# The spellings the portal's client accepts, exactly. The portal keeps its own
# copy of these lists (its client must not import the emulator): change both.
DOCUMENT_URL = ("downloadUrl", "url", "download_url", "pdfUrl", "pdf_url", "link", "href")
FAILURE_CODE = ("code", "publicCode", "errorCode")
FAILURE_MESSAGE = ("message", "publicMessage", "description")
LATEST = ("latest", "lastIssued", "latestIssued", "current")
IN_PROGRESS = ("inProgress", "in_progress", "pending", "request")

# Members a vendor might add, with values of their kinds. None is a name the
# client may read (no spelling above, no id, status, plate, date…), and no
# value is an object with a `status`: a tolerant reader must skip them all.
_EXTRAS: dict[str, Callable[[random.Random], object]] = {
    "revision": lambda rng: rng.randint(1, 999),
    "source": lambda rng: rng.choice(("fleet-core", "detran-gateway", "legacy-sync")),
    "meta": lambda rng: {"shard": rng.randint(0, 63), "replica": rng.choice("abc")},
    "links": lambda rng: [{"rel": "self", "method": "GET"}, {"rel": rng.choice(("help", "docs"))}],
    "region": lambda rng: None,
    "etag": lambda rng: f'W/"{rng.getrandbits(64):016x}"',
    "apiVersion": lambda rng: f"2.{rng.randint(0, 9)}.{rng.randint(0, 20)}",
    "flags": lambda rng: rng.sample(("beta", "cached", "partner", "sandbox"), k=2),
    "vendorExtensions": lambda rng: {},
    "score": lambda rng: round(rng.random(), 3),
    "locale": lambda rng: rng.choice(("pt-BR", "pt", "es-AR")),
    "checksum": lambda rng: f"{rng.getrandbits(128):032x}",
    "sequence": lambda rng: rng.randint(1, 10**9),
    "deprecated": lambda rng: False,
    "notice": lambda rng: None,
    "channel": lambda rng: rng.choice(("api", "batch", "portal")),
    "_links": lambda rng: {"help": {"title": "Central de ajuda"}},
    "x-request-cost": lambda rng: rng.randint(1, 5),
}

# Where additions go, and how many: the list-cars envelope, its `cars` and
# the key generator's answer get one each (the task says so); the rest 1 to 3.
_ONE = 1, 1
_PLACES: dict[str, tuple[int, int]] = {
    "envelope": _ONE,  # GET /key/list-cars, beside `cars`, `error`, `code`
    "cars": _ONE,  # beside `data` and `total`
    "vehicle": (1, 3),  # each vehicle of `data`
    "access_key": _ONE,  # POST /key/generator
    "crlv_request": (1, 3),  # an e-CRLV request, alone or in the vehicle view
    "vehicle_view": (1, 3),  # GET /v2/crlv/vehicles/{carPlate}
    "cnh_licence": (1, 3),  # an individual lookup, or a batch item that found a licence
    "cnh_item_error": (1, 3),  # a batch item in error
    "cnh_batch": (1, 3),  # beside the batch's `items`
}


def random_spelling_seed() -> int:
    """The spelling seed when none is given: any, printed at start-up to repeat a run."""
    return secrets.randbelow(100_000)


@dataclass(frozen=True, slots=True)
class Spellings:
    """The names chosen for one spelling seed, and the members added where."""

    seed: int
    document_url: str
    failure_code: str
    failure_message: str
    latest: str
    in_progress: str
    extras: Mapping[str, Mapping[str, object]]  # place (see _PLACES) -> members added

    @property
    def names(self) -> dict[str, str]:
        return {
            "document_url": self.document_url,
            "failure_code": self.failure_code,
            "failure_message": self.failure_message,
            "latest": self.latest,
            "in_progress": self.in_progress,
        }


@lru_cache(maxsize=64)
def spellings(seed: int) -> Spellings:
    """The spellings of `seed`: the same for the same seed, on every run."""
    rng = random.Random(f"spelling:{seed}")
    document_url, failure_code, failure_message = (
        rng.choice(DOCUMENT_URL),
        rng.choice(FAILURE_CODE),
        rng.choice(FAILURE_MESSAGE),
    )
    latest, in_progress = rng.choice(LATEST), rng.choice(IN_PROGRESS)
    extras = {}
    for place, (fewest, most) in _PLACES.items():
        names = rng.sample(sorted(_EXTRAS), k=rng.randint(fewest, most))
        extras[place] = {name: _EXTRAS[name](rng) for name in names}
    return Spellings(seed, document_url, failure_code, failure_message, latest, in_progress, extras)


class Mode:
    """Whether the API answers minimally, and with which spelling seed."""

    def __init__(self, *, minimal: bool, spelling_seed: int) -> None:
        self._lock = threading.Lock()
        self._minimal = minimal
        self._seed = spelling_seed

    def set(self, *, minimal: bool, spelling_seed: int | None = None) -> None:
        """Switch; without a spelling seed, keep the current one."""
        with self._lock:
            self._minimal = minimal
            if spelling_seed is not None:
                self._seed = spelling_seed

    def current(self) -> Spellings | None:
        """The spellings to answer with, or None in normal mode."""
        with self._lock:
            minimal, seed = self._minimal, self._seed
        return spellings(seed) if minimal else None

    def as_json(self) -> dict[str, Any]:
        with self._lock:
            minimal, seed = self._minimal, self._seed
        chosen = spellings(seed)
        return {
            "minimal": minimal,
            "spelling_seed": seed,
            "names": chosen.names,
            "extras": {place: list(members) for place, members in chosen.extras.items()},
        }


# The answers' shapes. Each takes what normal mode would answer (or its
# parts) and keeps what the spec promises, under the seed's spellings.


def list_cars_body(vehicles: Iterable[Vehicle], chosen: Spellings) -> bytes:
    """GET /key/list-cars (2.2, 4.1): the five specified members of each vehicle."""
    extra = chosen.extras["vehicle"]
    data = [
        {
            "id": vehicle.id,
            "car_plate": vehicle.car_plate,
            "model": vehicle.model,
            "active": vehicle.active,
            "driver_id": vehicle.driver_id,
            **extra,
        }
        for vehicle in vehicles
    ]
    cars = {"data": data, "total": len(data), **chosen.extras["cars"]}
    return encode_json(
        {"cars": cars, "error": False, "code": "fbk_200", **chosen.extras["envelope"]}
    )


def access_key(key: str, chosen: Spellings) -> dict[str, object]:
    """POST /key/generator (4.2)."""
    return {"accessKey": key, "error": False, "code": "fbk_200", **chosen.extras["access_key"]}


def crlv_request(described: Mapping[str, Any], chosen: Spellings) -> dict[str, object]:
    """An e-CRLV request (2.4): its status, and its document's URL or its failure."""
    shaped: dict[str, object] = {"status": described["status"]}
    if "document" in described:
        shaped["document"] = {chosen.document_url: described["document"]["downloadUrl"]}
    if "failure" in described:
        failure = described["failure"]
        shaped["failure"] = {
            chosen.failure_code: failure["code"],
            chosen.failure_message: failure["message"],
        }
    return {**shaped, **chosen.extras["crlv_request"]}


def vehicle_view(
    latest: Mapping[str, Any] | None, in_progress: Mapping[str, Any] | None, chosen: Spellings
) -> dict[str, object]:
    """The vehicle e-CRLV view (2.5): each of the two only when it exists."""
    view: dict[str, object] = {}
    if latest is not None:
        view[chosen.latest] = crlv_request(latest, chosen)
    if in_progress is not None:
        view[chosen.in_progress] = crlv_request(in_progress, chosen)
    return {**view, **chosen.extras["vehicle_view"]}


def cnh_item(item: Mapping[str, Any], chosen: Spellings) -> dict[str, object]:
    """A licence, or a batch item in error (`status: error`), without its `cpf`."""
    place = "cnh_item_error" if item["status"] == "error" else "cnh_licence"
    kept = {name: value for name, value in item.items() if name != "cpf"}
    return {**kept, **chosen.extras[place]}


def cnh_batch(items: Iterable[Mapping[str, Any]], chosen: Spellings) -> dict[str, object]:
    """A batch lookup's answer: one entry per CPF sent, in their order."""
    return {"items": [cnh_item(item, chosen) for item in items], **chosen.extras["cnh_batch"]}
