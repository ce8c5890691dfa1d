"""What the Fleet API returns, as frozen records, and how its JSON is read.

The readers are tolerant: members they do not know are ignored (spec 6.2:
additions are additive), and they require only what the spec promises (a
vehicle's five members, an e-CRLV request's `status`, a document's link);
a required member missing or of the wrong type is a `ShapeError`, which the
client reports as `InvalidResponse`. Where the spec does not show a member's
name (inside an e-CRLV request, the two parts of a vehicle's e-CRLV view),
the likely names are accepted, listed once in `_MEMBERS`; every other member
is optional and a page simply does not show it when it is missing.

One module: it is where the spec's shapes are read, each once, and the vehicle
list's fast reader (straight from the bytes, in one pass or in batches) must
accept and refuse exactly what its usual reader beside it does.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

import msgspec

from fleet.api.values import parse_moment


class ShapeError(ValueError):
    """The JSON does not have the shape the spec describes."""


@dataclass(frozen=True, slots=True)
class VehicleColumns:
    """The whole fleet column by column: row `i` is `ids[i]`, `plates[i]`,
    `model_names[model_codes[i]]`, `actives[i]`, and `driver_ids[i]` if `has_driver[i]`.

    The compact shape for a fleet of a million vehicles: numbers in arrays (four bytes
    a row while every id fits in 32 bits, as they usually do, else eight), each
    model's name once, a byte a row for being active (1) and for having a driver (1).
    """

    ids: array[int]
    plates: list[str]
    model_names: list[str]
    model_codes: array[int]
    actives: bytes
    drivers: array[int]  # 0 where the vehicle has none
    has_driver: bytes
    total: int

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def models(self) -> list[str]:
        """Each row's model name."""
        return list(map(self.model_names.__getitem__, self.model_codes))

    @property
    def driver_ids(self) -> list[int | None]:
        """Each row's driver id, None for a vehicle without one."""
        return [d if has else None for d, has in zip(self.drivers, self.has_driver, strict=True)]

    @classmethod
    def of(
        cls,
        *,
        ids: list[int],
        plates: list[str],
        models: list[str],
        actives: bytes,
        driver_ids: list[int | None],
        total: int,
    ) -> VehicleColumns:
        """The columns of these lists; `ShapeError` for a number no 64-bit integer holds."""
        collector = _ColumnsCollector()
        collector.add(ids, plates, models, actives, driver_ids)
        return collector.columns(total)


# Ids in four bytes (unsigned), until one does not fit: then in eight (signed, as JSON's
# integers are read), which any larger number is refused from.
_NARROW: Final = "I"
_WIDE: Final = "q"


def _extended(column: array[int], numbers: list[int]) -> array[int]:
    """`column` with `numbers` added: the same array, or a wider copy when one of them
    does not fit (once per fleet at most); `ShapeError` when no 64-bit integer holds one.
    `fromlist`, not `extend`: a list is read in C, twice as fast as an iterable."""
    try:
        column.fromlist(numbers)  # on overflow, nothing of `numbers` is added
    except OverflowError:
        if column.typecode == _WIDE:
            raise ShapeError("a vehicle's id or driver id is out of range") from None
        return _extended(array(_WIDE, column), numbers)
    return column


class _ColumnsCollector:
    """`VehicleColumns` built a part of the fleet at a time (`add`)."""

    def __init__(self) -> None:
        self.ids = array(_NARROW)
        self.plates: list[str] = []
        self.codes: dict[str, int] = {}
        self.model_codes = array("I")
        self.actives = bytearray()
        self.drivers = array(_NARROW)
        self.has_driver = bytearray()

    def add(
        self,
        ids: list[int],
        plates: list[str],
        models: list[str],
        actives: bytes,
        driver_ids: list[int | None],
    ) -> None:
        codes = self.codes
        self.ids = _extended(self.ids, ids)
        self.drivers = _extended(self.drivers, [driver or 0 for driver in driver_ids])
        self.plates.extend(plates)
        for model in dict.fromkeys(models):  # each model of the batch once, in order
            if model not in codes:
                codes[model] = len(codes)
        self.model_codes.fromlist(list(map(codes.__getitem__, models)))
        self.actives += actives
        self.has_driver += bytes([driver is not None for driver in driver_ids])

    def columns(self, total: int) -> VehicleColumns:
        return VehicleColumns(
            ids=self.ids,
            plates=self.plates,
            model_names=list(self.codes),
            model_codes=self.model_codes,
            actives=bytes(self.actives),
            drivers=self.drivers,
            has_driver=bytes(self.has_driver),
            total=total,
        )


class CrlvStatus(StrEnum):
    """State of an e-CRLV issuance request (spec 3)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self in (CrlvStatus.COMPLETED, CrlvStatus.FAILED)


@dataclass(frozen=True, slots=True)
class CrlvDocument:
    """The issued PDF: a pre-signed download link, valid for one hour.

    `download_url` is None when the document came without a link the portal
    could find (the spec names none of the document's members).
    """

    # The link works without credentials for an hour: keep it out of reprs
    # (and so out of logs and tracebacks).
    download_url: str | None = field(repr=False)
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class CrlvFailure:
    """Why an issuance failed, in public words that can be shown to a user.

    The spec promises "a public code and message" under names it does not
    show: either may be missing when they came under other names.
    """

    code: str | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class CrlvRequest:
    """An e-CRLV issuance request and, when final, its document or failure.

    Only `status` is promised (spec 2.4); every other member may be missing.
    """

    status: CrlvStatus
    request_id: str | None = None
    plate: str | None = None
    document: CrlvDocument | None = None
    failure: CrlvFailure | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class VehicleCrlv:
    """A vehicle's latest issued e-CRLV and the request in progress, each if any.

    `unrecognised` names the members that looked like e-CRLV information but
    came under names the portal does not know (spec 2.5 shows none): when
    nothing was recognised, a page says it has no e-CRLV information rather
    than "none issued".
    """

    plate: str
    latest: CrlvRequest | None
    in_progress: CrlvRequest | None
    unrecognised: tuple[str, ...] = ()
    # The names of every member of the answer (never their values), for the log.
    members: tuple[str, ...] = ()

    @property
    def is_unreadable(self) -> bool:
        return bool(self.unrecognised) and self.latest is None and self.in_progress is None


# Accepted names of members the spec leaves open, preferred first. The
# emulator's minimal mode spells them each of these ways (it keeps its own list).
_MEMBERS: Final[Mapping[str, tuple[str, ...]]] = {
    "request_id": ("requestId", "id", "request_id"),
    "plate": ("carPlate", "plate", "car_plate"),
    "created_at": ("createdAt", "created_at", "requestedAt", "requested_at"),
    "updated_at": ("updatedAt", "updated_at", "issuedAt", "issued_at"),
    "download_url": (
        "downloadUrl",
        "url",
        "download_url",
        "pdfUrl",
        "pdf_url",
        "link",
        "href",
    ),
    "expires_at": ("expiresAt", "expires_at", "validUntil", "valid_until"),
    "failure_code": ("code", "publicCode", "errorCode", "public_code", "error_code"),
    "failure_message": (
        "message",
        "publicMessage",
        "description",
        "public_message",
        "detail",
    ),
    "latest": ("latest", "lastIssued", "latestIssued", "current"),
    "in_progress": ("inProgress", "in_progress", "pending", "request"),
}
# Members of a vehicle's e-CRLV view that are about the answer, not a request.
_VIEW_ENVELOPE: Final = frozenset({"carPlate", "plate", "car_plate", "traceId", "error", "code"})


def _member(data: Mapping[str, Any], name: str) -> Any:
    for key in _MEMBERS.get(name, (name,)):
        value = data.get(key)
        if value is not None:
            return value
    return None


def json_object(value: Any, what: str) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else `ShapeError` naming `what`."""
    if not isinstance(value, dict):
        raise ShapeError(f"{what} is not a JSON object")
    return value


def _timestamp(data: Mapping[str, Any], name: str) -> datetime | None:
    """A moment in any of the usual spellings, or None (then it is not shown).

    The spec shows no dates at all: `fleet.api.values.parse_moment` reads them
    as it reads a webhook's (ISO 8601, Unix seconds or milliseconds, `dd/mm/yyyy
    hh:mm`; UTC without an offset); anything else is left out rather than failing
    the answer.
    """
    return parse_moment(_member(data, name))


def vehicle_columns_from_json(body: Any) -> VehicleColumns:
    """Read `{"cars": {"data": [...], "total": N}}` (spec 4.1) column by column."""
    cars = json_object(json_object(body, "the answer").get("cars"), "cars")
    data, total = cars.get("data"), cars.get("total")
    if not isinstance(data, list):
        raise ShapeError("cars.data is not a list")
    if type(total) is not int:
        raise ShapeError("cars.total is not an integer")
    # Up to 100,000 items: a comprehension per column and exact type checks
    # per column run in C; only a bad answer pays for finding the bad item.
    try:
        ids = [item["id"] for item in data]
        plates = [item["car_plate"] for item in data]
        models = [item["model"] for item in data]
        actives = bytes([item.get("active") == "1" for item in data])
        drivers = [item.get("driver_id") for item in data]
    except (KeyError, TypeError, AttributeError):
        raise ShapeError(_first_bad_vehicle(data)) from None
    if (
        not set(map(type, ids)) <= {int}
        or not set(map(type, plates)) <= {str}
        or not set(map(type, models)) <= {str}
        or not set(map(type, drivers)) <= {int, type(None)}
    ):
        raise ShapeError(_first_bad_vehicle(data))
    return VehicleColumns.of(
        ids=ids, plates=plates, models=models, actives=actives, driver_ids=drivers, total=total
    )


class _Car(msgspec.Struct, gc=False):
    id: int
    car_plate: str
    model: str
    active: Any = None
    driver_id: int | None = None


class _Cars(msgspec.Struct, gc=False):
    data: list[msgspec.Raw]  # each vehicle as sent, read a batch at a time
    total: int


class _CarsAnswer(msgspec.Struct, gc=False):
    cars: _Cars
    error: Any = None  # v1's envelope: `false`, or `true` for an error whatever the status


class _WholeCars(msgspec.Struct, gc=False):
    data: list[_Car]
    total: int


class _WholeCarsAnswer(msgspec.Struct, gc=False):
    cars: _WholeCars
    error: Any = None


_CARS_DECODER: Final = msgspec.json.Decoder(_CarsAnswer)
_CAR_BATCH_DECODER: Final = msgspec.json.Decoder(list[_Car])
_WHOLE_CARS_DECODER: Final = msgspec.json.Decoder(_WholeCarsAnswer)
# Vehicles decoded together: a million never exist as a million records at once.
CAR_BATCH: Final = 10_000
# An answer up to this size (about 120,000 vehicles, some 25 MB of records) is decoded
# in one pass: batches cost a second pass over the bytes, which a cold page waits for.
WHOLE_ANSWER_BYTES: Final = 16 * 1024 * 1024


def vehicle_columns_from_bytes(
    content: bytes | bytearray, *, whole_bytes: int = WHOLE_ANSWER_BYTES
) -> VehicleColumns | None:
    """`vehicle_columns_from_json` straight from the answer's bytes; None unless the
    answer is exactly the shape spec 4.1 describes.

    An answer of up to `whole_bytes` is decoded at once into typed records
    (msgspec), read column by column. A larger one's vehicles are found first (each
    a view of the bytes, not a copy), then decoded `CAR_BATCH` at a time: no dict per
    vehicle, and at a million vehicles no million records at once either. The types
    are as strict as `vehicle_columns_from_json`'s (an int is not a bool, unknown
    members are ignored); anything else, including a v1 error envelope, returns
    None, and the caller reads the answer the usual way, which says what is wrong
    with it.
    """
    try:
        answer: _CarsAnswer | _WholeCarsAnswer
        batches: Iterable[list[_Car]]
        if len(content) <= whole_bytes:
            answer = _WHOLE_CARS_DECODER.decode(content)
            batches = (answer.cars.data,)
        else:
            answer = _CARS_DECODER.decode(content)
            batches = _car_batches(answer.cars.data)
        if answer.error is True:  # as `parse_v1_error` reads it: only `true` is an error
            return None
        collector = _ColumnsCollector()
        for cars in batches:
            collector.add(
                [car.id for car in cars],
                [car.car_plate for car in cars],
                [car.model for car in cars],
                bytes([car.active == "1" for car in cars]),
                [car.driver_id for car in cars],
            )
    except (msgspec.DecodeError, msgspec.ValidationError, ShapeError):
        return None
    return collector.columns(answer.cars.total)


def _car_batches(raw: list[msgspec.Raw]) -> Iterator[list[_Car]]:
    """The vehicles `raw` holds (each as sent), decoded `CAR_BATCH` at a time."""
    for start in range(0, len(raw), CAR_BATCH):
        yield _CAR_BATCH_DECODER.decode(b"[%b]" % b",".join(raw[start : start + CAR_BATCH]))


def _first_bad_vehicle(data: list[Any]) -> str:
    """What is wrong with the first vehicle that is not as spec 2.2 says."""
    for number, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            return f"vehicle #{number} is not a JSON object"
        for name in ("id", "car_plate", "model"):
            if name not in item:
                return f"vehicle #{number} has no '{name}'"
        driver_id = item.get("driver_id")
        if (
            type(item["id"]) is not int
            or type(item["car_plate"]) is not str
            or type(item["model"]) is not str
            or (driver_id is not None and type(driver_id) is not int)
        ):
            return f"vehicle {item['id']!r} has a member of the wrong type"
    return "a vehicle is not as the spec describes"


_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def access_key_from_json(body: Any) -> str:
    """Read `{"accessKey": "<uuid>"}` (spec 4.2); the key must be a UUID."""
    key = json_object(body, "the answer").get("accessKey")
    if not isinstance(key, str) or not _UUID.fullmatch(key):
        # Never quote the value: if it is a key after all, it is a credential.
        raise ShapeError("accessKey is missing or not a UUID")
    return key


def _optional_text(data: Mapping[str, Any], name: str) -> str | None:
    """A member the spec does not promise, as text: a string or a number, else None."""
    value = _member(data, name)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) and value.strip() else None


def _is_web_link(value: Any) -> bool:
    return isinstance(value, str) and value.lower().startswith(("https://", "http://"))


def _document(raw: Any) -> CrlvDocument:
    """The document of a completed request (2.4): "contains a download URL of the PDF"."""
    if _is_web_link(raw):  # the link itself, not an object holding it
        return CrlvDocument(download_url=raw)
    doc = json_object(raw, "document")
    url = _member(doc, "download_url")
    if not _is_web_link(url):
        # Under a name of its own: the one member that is a web link, if only one is.
        links = [value for value in doc.values() if _is_web_link(value)]
        url = links[0] if len(links) == 1 else None
    return CrlvDocument(download_url=url, expires_at=_timestamp(doc, "expires_at"))


def _failure(raw: Any) -> CrlvFailure:
    """The failure of a request (2.4): "a public code and a public message", each optional."""
    if isinstance(raw, str):
        return CrlvFailure(message=raw or None)
    fail = json_object(raw, "failure")
    return CrlvFailure(
        code=_optional_text(fail, "failure_code"),
        message=_optional_text(fail, "failure_message"),
    )


def crlv_request_from_json(
    body: Any,
    *,
    request_id: str | None = None,
    plate: str | None = None,
    status_when_missing: CrlvStatus | None = None,
) -> CrlvRequest:
    """Read an e-CRLV request (spec 2.4): only `status` is required.

    The ids the caller knows fill gaps. Inside a vehicle's view, an entry
    without a status takes `status_when_missing` (the latest *issued* one is
    completed).
    """
    data = json_object(body, "the e-CRLV request")
    raw_status = data.get("status")
    if raw_status is None and status_when_missing is not None:
        status = status_when_missing
    else:
        try:
            status = CrlvStatus(str(raw_status))
        except ValueError:
            raise ShapeError(
                f"the e-CRLV request has an unknown status {str(raw_status)[:40]!r}"
            ) from None
    document = failure = None
    if (raw := data.get("document")) is not None:
        document = _document(raw)
    if (raw := data.get("failure")) is not None:
        failure = _failure(raw)
    return CrlvRequest(
        status=status,
        request_id=_optional_text(data, "request_id") or request_id,
        plate=_optional_text(data, "plate") or plate,
        document=document,
        failure=failure,
        created_at=_timestamp(data, "created_at"),
        updated_at=_timestamp(data, "updated_at"),
    )


def _looks_like_crlv(value: Any) -> bool:
    """Whether an unknown member could hold e-CRLV information (a request, or a view)."""
    if isinstance(value, list):
        return any(_looks_like_crlv(item) for item in value)
    if not isinstance(value, dict):
        return False
    names = _MEMBERS["latest"] + _MEMBERS["in_progress"]
    return any(key in value for key in ("status", "document", "failure", *names))


def vehicle_crlv_from_json(body: Any, *, plate: str) -> VehicleCrlv:
    """Read a vehicle's e-CRLV view (spec 2.5): the latest issued and the request in
    progress, each present only when it exists, under names the spec does not show.

    Members under names that are not known but look like e-CRLV information
    are listed in `unrecognised` (by name only), never silently dropped.
    """
    data = json_object(body, "the vehicle e-CRLV view")
    own_plate = _optional_text(data, "plate") or plate
    latest, in_progress = _member(data, "latest"), _member(data, "in_progress")
    known = set(_MEMBERS["latest"] + _MEMBERS["in_progress"]) | _VIEW_ENVELOPE
    unrecognised = tuple(
        sorted(key for key, value in data.items() if key not in known and _looks_like_crlv(value))
    )
    return VehicleCrlv(
        plate=own_plate,
        latest=None
        if latest is None
        else crlv_request_from_json(
            latest, plate=own_plate, status_when_missing=CrlvStatus.COMPLETED
        ),
        in_progress=None
        if in_progress is None
        else crlv_request_from_json(
            in_progress, plate=own_plate, status_when_missing=CrlvStatus.IN_PROGRESS
        ),
        unrecognised=unrecognised,
        members=tuple(sorted(data)),
    )
