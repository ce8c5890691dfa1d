"""The platform's driver indications, `POST /v2/driver-indications`: ASSUMED shapes.

The spec names the route (4.6: its error examples refer to it) and shows neither
its method nor its request nor its answer. Everything below is an assumption,
kept in this one module so that the vendor's real shapes change it alone (the
emulator serves the same assumptions, `emulator/README.md`):

- method and path: `POST /v2/driver-indications`, a v2 route (section 5's three
  headers, RFC 7807 errors, 429 and 504 with `Retry-After`);
- request: `{"carPlate": "ABC1D23", "autoInfracao": "<the notice number>",
  "driver": {"name": "…", "cpf": "<11 digits>", "cnh": "<licence number>"},
  "indicatedOn": "YYYY-MM-DD"}`, `cpf` and `cnh` left out when not known;
- answer: 201 (or 200) `{"indicationId": "…", "status": "received"}` (or
  `"accepted"`, or another word the platform chooses: kept as sent);
- refusal: 422, an RFC 7807 problem whose `type` ends in
  `:error:indication-refused`, its `detail` saying why (the deadline passed,
  the driver's licence is not valid…): `IndicationRefused`;
- a 404 on this route: the platform has no such route (`IndicationRouteMissing`);
  an unknown plate or notice is a refusal, never a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Final

from fleet.api.errors import ApiError, FleetError, NotFound
from fleet.api.resources import ShapeError, json_object

DRIVER_INDICATIONS: Final = "/v2/driver-indications"
REFUSED_TYPE_SUFFIX: Final = ":error:indication-refused"
REFUSED_STATUS: Final = 422
# A small POST's answer: read no more than this of it (a hostile one is cut short).
INDICATION_ANSWER_MAX_BYTES: Final = 64 * 2**10
# The longest id, status or refusal reason kept from an answer: more is not an answer.
_LONGEST_TEXT: Final = 200
_LONGEST_REASON: Final = 500


@dataclass(frozen=True, slots=True, repr=False)
class IndicationRequest:
    """What the portal sends to indicate a fine's driver.

    Personal data (LGPD): the repr names nobody, since reprs end up in logs.
    """

    car_plate: str
    notice: str  # the fine's notice number, `autoInfracao`
    driver_name: str
    indicated_on: date
    driver_cpf: str | None = None  # eleven digits
    driver_cnh: str | None = None

    def __repr__(self) -> str:
        return f"<IndicationRequest indicated_on={self.indicated_on.isoformat()}>"

    def as_json(self) -> dict[str, Any]:
        driver: dict[str, str] = {"name": self.driver_name}
        if self.driver_cpf:
            driver["cpf"] = self.driver_cpf
        if self.driver_cnh:
            driver["cnh"] = self.driver_cnh
        return {
            "carPlate": self.car_plate,
            "autoInfracao": self.notice,
            "driver": driver,
            "indicatedOn": self.indicated_on.isoformat(),
        }

    def check(self) -> None:
        """`ValueError` when the request cannot be sent as it is (nothing is sent then)."""
        if not self.car_plate.strip() or not self.notice.strip():
            raise ValueError("an indication needs the fine's plate and notice number")
        if not self.driver_name.strip():
            raise ValueError("an indication needs the driver's name")
        cpf = self.driver_cpf
        if cpf is not None and not (len(cpf) == 11 and cpf.isascii() and cpf.isdigit()):
            raise ValueError("a CPF must be sent as its eleven digits")


@dataclass(frozen=True, slots=True)
class IndicationSent:
    """The platform received the indication: its id there and its status word."""

    indication_id: str
    status: str


class IndicationRefused(ApiError):
    """The platform (or the authority behind it) refused the indication; `message` is
    its reason, as it gave it (422 `…:error:indication-refused`)."""

    summary = "The platform refused the driver indication"


class IndicationRouteMissing(NotFound):
    """The platform answered 404 to `POST /v2/driver-indications`: it has no such route."""

    summary = "The platform has no driver-indications route (POST /v2/driver-indications)"


def indication_sent_from_json(body: Any) -> IndicationSent:
    """Read the answer of an indication received; `ShapeError` for anything else."""
    data = json_object(body, "the driver indication's answer")
    found = []
    for name in ("indicationId", "status"):
        value = data.get(name)
        if not isinstance(value, str) or not value.strip() or len(value) > _LONGEST_TEXT:
            raise ShapeError(f"the driver indication's answer has no usable {name}")
        found.append(value.strip())
    return IndicationSent(indication_id=found[0], status=found[1])


def indication_error(error: FleetError) -> FleetError:
    """`error` as this route's own failure where it is one: a refusal, or no such route."""
    fields: dict[str, Any] = {
        "status": error.status,
        "code": error.code,
        "trace_id": error.trace_id,
        "route": error.route,
        "method": error.method,
    }
    if (
        isinstance(error, ApiError)
        and error.status == REFUSED_STATUS
        and (error.code or "").endswith(REFUSED_TYPE_SUFFIX)
    ):
        return IndicationRefused(error.message[:_LONGEST_REASON], **fields)
    if isinstance(error, NotFound):
        return IndicationRouteMissing(error.message[:_LONGEST_REASON], **fields)
    return error
