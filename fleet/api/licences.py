"""What the CNH lookups return (spec 2.7, 4.5), as records, and how their JSON is read.

The spec shows no shape beyond "a batch has one entry per item; a failed item
has `status: error`". The members below are the ones the portal formats; any
other member, or a known one of an unexpected type, is kept as received in
`extra` so that a page can still list it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Final

from fleet.api.resources import ShapeError, json_object
from fleet.api.values import parse_day

# Known member -> (attribute, type). Dates are ISO 8601 days.
_LICENCE_MEMBERS: Final[Mapping[str, tuple[str, type]]] = {
    "name": ("name", str),
    "cnhNumber": ("number", str),
    "category": ("category", str),
    "situation": ("situation", str),
    "expiresAt": ("expires_on", date),
    "firstLicenceAt": ("first_licence_on", date),
    "points": ("points", int),
    "issuingState": ("issuing_state", str),
    "remarks": ("remarks", tuple),
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
    issuing_state: str | None = None  # the state (UF) whose DETRAN issued it
    # Codes the licence carries, such as "EAR" (exerce atividade remunerada).
    remarks: tuple[str, ...] | None = None
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
        return parse_day(value) if isinstance(value, str) else None
    if kind is int:
        return value if type(value) is int else None
    if kind is tuple:
        texts = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return tuple(value) if texts else None
    return value if isinstance(value, kind) else None


def cnh_lookup_from_json(body: Any, *, cpf: str) -> CnhLookupResult:
    """Read an individual lookup's answer (4.5): the licence of the CPF asked for."""
    return _cnh_entry(json_object(body, "the CNH lookup"), cpf=cpf, what="the CNH lookup")


def cnh_batch_from_json(body: Any, *, cpfs: Sequence[str] = ()) -> CnhBatchResult:
    """Read a batch lookup's answer: `{"items": [...]}`, one entry per CPF (2.7).

    An entry names its CPF when the API says it; otherwise, since the spec
    promises one entry per item, the entries are matched to `cpfs` (as sent)
    by position, which needs exactly one entry per CPF sent.
    """
    items = json_object(body, "the CNH batch lookup").get("items")
    if not isinstance(items, list):
        raise ShapeError("the CNH batch lookup has no list of items")
    by_position = len(items) == len(cpfs)
    entries = []
    for number, item in enumerate(items, start=1):
        what = f"item #{number} of the CNH batch lookup"
        sent = cpfs[number - 1] if by_position else None
        entries.append(_cnh_entry(json_object(item, what), cpf=sent, what=what))
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
