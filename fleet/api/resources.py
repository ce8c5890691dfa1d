"""What the Fleet API returns, as frozen records, and how its JSON is read.

The readers are tolerant: members they do not know are ignored (spec 6.2:
additions are additive), members they need must be there with the right type,
else `ShapeError`, which the client reports as `InvalidResponse`. Where the
spec does not fix a member's name (inside an e-CRLV request), the names we
accept are listed once, in `_MEMBERS`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Any, Final

import msgspec


class ShapeError(ValueError):
    """The JSON does not have the shape the spec describes."""


@dataclass(frozen=True, slots=True)
class Vehicle:
    """One vehicle of the fleet (spec 2.2)."""

    id: int
    plate: str
    model: str
    active: bool
    driver_id: int | None


@dataclass(frozen=True, slots=True)
class VehicleList:
    """The whole fleet as `GET /key/list-cars` returns it."""

    vehicles: tuple[Vehicle, ...]
    total: int


@dataclass(frozen=True, slots=True)
class VehicleColumns:
    """The whole fleet column by column: row `i` is `ids[i]`, `plates[i]`, ….

    The cheap shape for a fleet of 100,000 vehicles: five lists instead of one
    object per vehicle. `actives` holds 1 for an active vehicle, 0 otherwise.
    """

    ids: list[int]
    plates: list[str]
    models: list[str]
    actives: bytes
    driver_ids: list[int | None]
    total: int

    def __len__(self) -> int:
        return len(self.ids)

    def vehicles(self) -> tuple[Vehicle, ...]:
        return tuple(
            map(
                Vehicle,
                self.ids,
                self.plates,
                self.models,
                map(bool, self.actives),
                self.driver_ids,
            )
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
    """The issued PDF: a pre-signed download link, valid for one hour."""

    # The link works without credentials for an hour: keep it out of reprs
    # (and so out of logs and tracebacks).
    download_url: str = field(repr=False)
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class CrlvFailure:
    """Why an issuance failed, in public words that can be shown to a user."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class CrlvRequest:
    """An e-CRLV issuance request and, when final, its document or failure."""

    request_id: str
    plate: str
    status: CrlvStatus
    document: CrlvDocument | None = None
    failure: CrlvFailure | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class VehicleCrlv:
    """A vehicle's latest issued e-CRLV and the request in progress, each if any."""

    plate: str
    latest: CrlvRequest | None
    in_progress: CrlvRequest | None


# Accepted names of members the spec leaves open, preferred first.
_MEMBERS: Final[Mapping[str, tuple[str, ...]]] = {
    "request_id": ("requestId", "id", "request_id"),
    "plate": ("carPlate", "plate", "car_plate"),
    "created_at": ("createdAt", "created_at"),
    "updated_at": ("updatedAt", "updated_at"),
    "download_url": ("downloadUrl", "url", "download_url"),
    "expires_at": ("expiresAt", "expires_at"),
    "failure_code": ("code",),
    "failure_message": ("message", "detail"),
    "in_progress": ("inProgress", "in_progress"),
}


def _member(data: Mapping[str, Any], name: str) -> Any:
    for key in _MEMBERS.get(name, (name,)):
        value = data.get(key)
        if value is not None:
            return value
    return None


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ShapeError(f"{what} is not a JSON object")
    return value


def _text(data: Mapping[str, Any], name: str, what: str, default: str | None = None) -> str:
    value = _member(data, name)
    if value is None and default is not None:
        return default
    if not isinstance(value, str) or not value:
        raise ShapeError(f"{what} has no {name.replace('_', ' ')}")
    return value


def _timestamp(data: Mapping[str, Any], name: str, what: str) -> datetime | None:
    value = _member(data, name)
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None:
        raise ShapeError(f"{what} has an unreadable {name.replace('_', ' ')}")
    # ISO 8601 without an offset: the API speaks UTC.
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def vehicle_columns_from_json(body: Any) -> VehicleColumns:
    """Read `{"cars": {"data": [...], "total": N}}` (spec 4.1) column by column."""
    cars = _object(_object(body, "the answer").get("cars"), "cars")
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
    return VehicleColumns(
        ids=ids, plates=plates, models=models, actives=actives, driver_ids=drivers, total=total
    )


class _Car(msgspec.Struct, gc=False):
    id: int
    car_plate: str
    model: str
    active: Any = None
    driver_id: int | None = None


class _Cars(msgspec.Struct, gc=False):
    data: list[_Car]
    total: int


class _CarsAnswer(msgspec.Struct, gc=False):
    cars: _Cars
    error: Any = None  # v1's envelope: `false`, or `true` for an error whatever the status


_CARS_DECODER: Final = msgspec.json.Decoder(_CarsAnswer)


def vehicle_columns_from_bytes(content: bytes) -> VehicleColumns | None:
    """`vehicle_columns_from_json` straight from the answer's bytes; None unless the
    answer is exactly the shape spec 4.1 describes.

    For a fleet of 50,000 vehicles, decoding into typed records (msgspec) and
    reading them column by column takes a third of the time of building a
    dict per vehicle first: the cold vehicles page waits for it. The types
    are as strict as `vehicle_columns_from_json`'s (an int is not a bool,
    unknown members are ignored); anything else, including a v1 error
    envelope, returns None, and the caller reads the answer the usual way,
    which says what is wrong with it.
    """
    try:
        answer = _CARS_DECODER.decode(content)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if answer.error is True:  # as `parse_v1_error` reads it: only `true` is an error
        return None
    data = answer.cars.data
    return VehicleColumns(
        ids=[car.id for car in data],
        plates=[car.car_plate for car in data],
        models=[car.model for car in data],
        actives=bytes([car.active == "1" for car in data]),
        driver_ids=[car.driver_id for car in data],
        total=answer.cars.total,
    )


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


def vehicle_list_from_json(body: Any) -> VehicleList:
    """Read `{"cars": {"data": [...], "total": N}}` (spec 4.1) as `Vehicle` records."""
    columns = vehicle_columns_from_json(body)
    return VehicleList(vehicles=columns.vehicles(), total=columns.total)


_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def access_key_from_json(body: Any) -> str:
    """Read `{"accessKey": "<uuid>"}` (spec 4.2); the key must be a UUID."""
    key = _object(body, "the answer").get("accessKey")
    if not isinstance(key, str) or not _UUID.fullmatch(key):
        # Never quote the value: if it is a key after all, it is a credential.
        raise ShapeError("accessKey is missing or not a UUID")
    return key


def crlv_request_from_json(
    body: Any, *, request_id: str | None = None, plate: str | None = None
) -> CrlvRequest:
    """Read an e-CRLV request (spec 2.4); the ids the caller knows fill gaps."""
    data = _object(body, "the e-CRLV request")
    what = "the e-CRLV request"
    try:
        status = CrlvStatus(str(data.get("status")))
    except ValueError:
        raise ShapeError(f"{what} has an unknown status {data.get('status')!r}") from None
    document = failure = None
    if (raw := data.get("document")) is not None:
        doc = _object(raw, "document")
        document = CrlvDocument(
            download_url=_text(doc, "download_url", "document"),
            expires_at=_timestamp(doc, "expires_at", "document"),
        )
    if (raw := data.get("failure")) is not None:
        fail = _object(raw, "failure")
        failure = CrlvFailure(
            code=_text(fail, "failure_code", "failure"),
            message=_text(fail, "failure_message", "failure", default=""),
        )
    return CrlvRequest(
        request_id=_text(data, "request_id", what, default=request_id),
        plate=_text(data, "plate", what, default=plate),
        status=status,
        document=document,
        failure=failure,
        created_at=_timestamp(data, "created_at", what),
        updated_at=_timestamp(data, "updated_at", what),
    )


def vehicle_crlv_from_json(body: Any, *, plate: str) -> VehicleCrlv:
    """Read a vehicle's e-CRLV view (spec 2.5): `latest` and `inProgress`, each optional."""
    data = _object(body, "the vehicle e-CRLV view")
    own_plate = _text(data, "plate", "the vehicle e-CRLV view", default=plate)
    latest, in_progress = data.get("latest"), _member(data, "in_progress")
    return VehicleCrlv(
        plate=own_plate,
        latest=None if latest is None else crlv_request_from_json(latest, plate=own_plate),
        in_progress=(
            None if in_progress is None else crlv_request_from_json(in_progress, plate=own_plate)
        ),
    )


# --- Driver licence (CNH) lookups (spec 2.7, 4.5) ------------------------------------
#
# The spec shows no shape beyond "a batch has one entry per item; a failed item
# has `status: error`". The members below are the ones the portal formats; any
# other member, or a known one of an unexpected type, is kept as received in
# `extra` so that a page can still list it.

# Known member -> (attribute, type). Dates are ISO 8601 days.
_LICENCE_MEMBERS: Final[Mapping[str, tuple[str, type]]] = {
    "name": ("name", str),
    "cnhNumber": ("number", str),
    "category": ("category", str),
    "situation": ("situation", str),
    "expiresAt": ("expires_on", date),
    "firstLicenceAt": ("first_licence_on", date),
    "points": ("points", int),
}
# Members about the answer, not the licence: neither formatted nor listed.
_ENVELOPE_MEMBERS: Final = frozenset({"cpf", "status", "error", "traceId"})
CNH_ITEM_ERROR: Final = "error"


@dataclass(frozen=True, slots=True, repr=False)
class CnhLicence:
    """A driver's licence as a lookup returned it; each known member may be missing.

    Personal data (LGPD): its repr names no one, since reprs end up in logs.
    """

    name: str | None = None
    number: str | None = None
    category: str | None = None
    situation: str | None = None
    expires_on: date | None = None
    first_licence_on: date | None = None
    points: int | None = None
    # Members the portal does not know, as received (spec 6.2: additions are additive).
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<CnhLicence category={self.category!r} situation={self.situation!r}>"


@dataclass(frozen=True, slots=True)
class CnhItemError:
    """Why one lookup of a batch failed: the API's code and message, when it gave them."""

    code: str | None
    message: str


@dataclass(frozen=True, slots=True)
class CnhLookupResult:
    """One CPF's answer: its licence, or (inside a batch) the item's error.

    `members` is the answer as received, minus the envelope (`cpf`, `status`,
    `traceId`): what the portal stores and reads again with `cnh_licence_from_json`.
    The repr leaves the CPF out: it is personal data, and reprs end up in logs.
    """

    cpf: str = field(repr=False)
    licence: CnhLicence | None = None
    error: CnhItemError | None = None
    members: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class CnhBatchResult:
    """A batch lookup's entries, in the order of the answer."""

    items: tuple[CnhLookupResult, ...]


def cnh_licence_from_json(members: Mapping[str, Any]) -> CnhLicence:
    """The licence in `members`: known members typed, the others kept in `extra`."""
    typed: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, value in members.items():
        if name in _ENVELOPE_MEMBERS:
            continue
        known = _LICENCE_MEMBERS.get(name)
        converted = None if known is None else _as(value, known[1])
        if known is not None and converted is not None:
            typed[known[0]] = converted
        elif value is not None and value != "":
            extra[name] = value
    return CnhLicence(**typed, extra=extra)


def _as(value: Any, kind: type) -> Any:
    """`value` as `kind`, or None when it is not one (it is then listed, not dropped)."""
    if kind is date:
        try:
            return date.fromisoformat(value[:10]) if isinstance(value, str) else None
        except ValueError:
            return None
    if kind is int:
        return value if type(value) is int else None
    return value if isinstance(value, kind) else None


def cnh_lookup_from_json(body: Any, *, cpf: str) -> CnhLookupResult:
    """Read an individual lookup's answer (4.5): the licence of the CPF asked for."""
    return _cnh_entry(_object(body, "the CNH lookup"), cpf=cpf, what="the CNH lookup")


def cnh_batch_from_json(body: Any) -> CnhBatchResult:
    """Read a batch lookup's answer: `{"items": [...]}`, one entry per CPF (2.7)."""
    items = _object(body, "the CNH batch lookup").get("items")
    if not isinstance(items, list):
        raise ShapeError("the CNH batch lookup has no list of items")
    entries = []
    for number, item in enumerate(items, start=1):
        what = f"item #{number} of the CNH batch lookup"
        entries.append(_cnh_entry(_object(item, what), cpf=None, what=what))
    return CnhBatchResult(items=tuple(entries))


def _cnh_entry(data: Mapping[str, Any], *, cpf: str | None, what: str) -> CnhLookupResult:
    # Never quote a member's value in a ShapeError: these are personal data.
    own_cpf = data.get("cpf")
    if own_cpf is None and cpf is not None:
        own_cpf = cpf
    if not isinstance(own_cpf, str) or not own_cpf:
        raise ShapeError(f"{what} has no cpf")
    members = {k: v for k, v in data.items() if k not in _ENVELOPE_MEMBERS}
    if data.get("status") == CNH_ITEM_ERROR:
        raw = data.get("error")
        details = raw if isinstance(raw, dict) else {}
        code, message = details.get("code"), details.get("message")
        error = CnhItemError(
            code=code if isinstance(code, str) and code else None,
            message=message if isinstance(message, str) else "",
        )
        return CnhLookupResult(cpf=own_cpf, licence=None, error=error, members=members)
    return CnhLookupResult(cpf=own_cpf, licence=cnh_licence_from_json(members), members=members)
