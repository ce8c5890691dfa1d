"""Reading the fleet platform's webhook payloads (spec 2.6 and 6): a tolerant reader.

The spec fixes little: the event kind is a top-level `frame` (a fine) or
`notification` object; `treated` is a boolean, never null; a fine's
`linkFrame` (URL or null) and `link` (URL) may sit at the top level or
inside `frame`. Everything else may grow at any time (rule 2 of section 6),
so unknown keys and unknown kinds are kept and reported, never refused.

What is refused (`InvalidPayload`) is what would make a record wrong: a body
that is not a JSON object, a `treated` that is missing, null or not a
boolean (never coerced), an id or a link of the wrong type. The delivery is
kept with that message and can be replayed.

What a member says is read here too, once, for every page, export, e-mail and
outgoing webhook: the plate (`payload_plate`, `payload_registration`), any text
(`payload_text`), a fine's amount and time (`payload_amount`,
`payload_occurred_at`, through `fleet.api.values`); what a fine says of its
infraction beyond the spec, by `fleet.webhooks.facts`. The fine's columns
keep what these read; the payload keeps what was sent.

Pure functions: no database, no settings. `fleet.webhooks.receive` stores
deliveries, `fleet.webhooks.records` applies what this reads.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

import orjson

from fleet import plates
from fleet.api.values import parse_amount, parse_moment

FINE: Final = "frame"
NOTIFICATION: Final = "notification"
KINDS: Final = (FINE, NOTIFICATION)

# Keys the portal knows, by where they sit. The emulator's README describes the
# payload these come from; anything else is reported as unknown (admin).
KNOWN_TOP_LEVEL: Final = frozenset({FINE, NOTIFICATION, "linkFrame", "link"})
_COMMON: Final = frozenset({"id", "treated", "createdAt", "updatedAt", "updated_at", "carPlate"})
KNOWN_IN: Final = {
    FINE: _COMMON
    | {"linkFrame", "link", "autoInfracao", "description", "infractionCode"}
    | {"occurredAt", "amount"}
    # The infraction's facts (`fleet.webhooks.facts`).
    | {"severity", "points", "city", "state", "authority"},
    NOTIFICATION: _COMMON | {"type", "title", "message"},
}
# Every known key as `unknown_keys` names them: "frame", "frame.treated", ...
KNOWN_PATHS: Final = KNOWN_TOP_LEVEL | frozenset(
    f"{kind}.{name}" for kind, names in KNOWN_IN.items() for name in names
)
# What tells one record from another when the payload has no id: fields that
# do not change when the record is updated. Keys the portal does not know are
# left out too, so that a key the platform adds later does not split a record.
_IDENTIFYING: Final = {
    FINE: ("carPlate", "autoInfracao", "description", "infractionCode", "occurredAt", "amount"),
    NOTIFICATION: ("carPlate", "type", "title", "message", "createdAt"),
}
_CHANGING: Final = frozenset({"id", "treated", "linkFrame", "link", "updatedAt", "updated_at"})
MAX_ID_LENGTH: Final = 100
# Characters of `WebhookRecord.registration`, and of `Fine.reference` (a notice number).
REGISTRATION_LENGTH: Final = 20
REFERENCE_LENGTH: Final = 60
_SAMPLE_LENGTH: Final = 200


class InvalidPayload(ValueError):
    """The delivery cannot become a record as it is; the message says why."""


@dataclass(frozen=True, slots=True)
class Event:
    """One fine or notification event, as the payload states it."""

    kind: str  # FINE or NOTIFICATION
    key: str  # "id:<id>", or "sha256:<digest>" of the identifying fields
    external_id: str  # "" when the payload has none
    treated: bool
    as_of: datetime | None  # the payload's own time of the change (updatedAt), if any
    data: dict[str, Any]  # the event object as received
    link_frame: str | None = None  # None: not available yet (null or absent)
    link: str | None = None


def is_json_content_type(content_type: str) -> bool:
    """`application/json` or any `+json` media type, whatever its parameters."""
    media_type = content_type.partition(";")[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


def check_content_type(content_type: str) -> None:
    """`InvalidPayload` unless `content_type` is JSON's (`is_json_content_type`)."""
    if not is_json_content_type(content_type):
        shown = content_type.partition(";")[0].strip()[:100] or "none"
        raise InvalidPayload(f"the Content-Type is {shown!r}, not application/json")


def parse_body(body: bytes, content_type: str) -> dict[str, Any]:
    """The body as a JSON object, or `InvalidPayload` saying what is wrong with it."""
    check_content_type(content_type)
    if not body.strip():
        raise InvalidPayload("the body is empty")
    try:
        payload = orjson.loads(_utf8(body, content_type))
    except orjson.JSONDecodeError as error:
        raise InvalidPayload(f"the body is not valid JSON: {error}") from None
    if not isinstance(payload, dict):
        raise InvalidPayload(f"the body is JSON but not an object (a {_type_name(payload)})")
    if b"\\u0000" in body:  # JSON spells U+0000 so, and only so
        cleaned: dict[str, Any] = _without_nul(payload)
        return cleaned
    return payload


def _without_nul(value: Any) -> Any:
    """`value` with U+0000 dropped from every string, key or value: PostgreSQL's text and
    jsonb cannot hold it, and no text of a fine needs it. The body as received keeps it."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


def kind_of(payload: dict[str, Any]) -> str | None:
    """FINE or NOTIFICATION; None for a kind the portal does not know."""
    kinds = [kind for kind in KINDS if kind in payload]
    if len(kinds) > 1:
        raise InvalidPayload("the payload carries both a frame and a notification")
    return kinds[0] if kinds else None


def event_from(payload: dict[str, Any]) -> Event | None:
    """The event in `payload`; None when its kind is unknown (kept, not refused)."""
    kind = kind_of(payload)
    if kind is None:
        return None
    data = payload[kind]
    if not isinstance(data, dict):
        raise InvalidPayload(f"{kind} must be an object, not {_type_name(data)}")
    external_id = _external_id(kind, data)
    key = f"id:{external_id}" if external_id else f"sha256:{_identity_digest(kind, data)}"
    treated = _treated(kind, data)
    is_fine = kind == FINE
    return Event(
        kind=kind,
        key=key,
        external_id=external_id,
        treated=treated,
        as_of=parse_moment(data.get("updatedAt", data.get("updated_at"))),
        data=data,
        link_frame=_link(data, payload, "linkFrame") if is_fine else None,
        link=_link(data, payload, "link") if is_fine else None,
    )


def payload_text(payload: object, *names: str) -> str:
    """The first of `names` in `payload` that holds a scalar, as text ("" if none)."""
    if isinstance(payload, dict):
        for name in names:
            value = payload.get(name)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                return str(value)
    return ""


def payload_plate(payload: object) -> str:
    """The plate an event's payload names, as sent ("" if none)."""
    return payload_text(payload, "carPlate", "plate")


def payload_registration(payload: object) -> str:
    """`WebhookRecord.registration` for `payload`: its plate in the Mercosul format."""
    return plates.registration(payload_plate(payload))[:REGISTRATION_LENGTH]


def payload_amount(payload: object) -> Decimal | None:
    """A fine payload's `amount` (`values.parse_amount`); None if absent or malformed."""
    return parse_amount(payload.get("amount")) if isinstance(payload, dict) else None


def payload_reference(payload: object) -> str:
    """A fine payload's notice number (`autoInfracao`), as sent, for `Fine.reference`."""
    return payload_text(payload, "autoInfracao").strip()[:REFERENCE_LENGTH]


def payload_wording(payload: object, *, kind: str) -> str:
    """What records of `kind` share and a search finds (`Wording`): a fine's infraction
    (`description`), a notification's `title`; as sent, "" if none."""
    return payload_text(payload, "description" if kind == FINE else "title").strip()


def payload_occurred_at(payload: object) -> datetime | None:
    """A fine payload's `occurredAt` (`values.parse_moment`); None if absent or malformed."""
    return parse_moment(payload.get("occurredAt")) if isinstance(payload, dict) else None


def unknown_keys(payload: dict[str, Any]) -> dict[str, str]:
    """Keys of `payload` the portal does not know, as `path -> a sample of the value`.

    Paths are `name` at the top level and `frame.name`, `notification.name`
    inside an event; the inside of an unknown key is not walked.
    """
    found = {name: _sample(value) for name, value in payload.items() if name not in KNOWN_TOP_LEVEL}
    for kind, known in KNOWN_IN.items():
        data = payload.get(kind)
        if isinstance(data, dict):
            found |= {
                f"{kind}.{name}": _sample(value)
                for name, value in data.items()
                if name not in known
            }
    return found


def _utf8(body: bytes, content_type: str) -> bytes:
    """JSON is UTF-8 (RFC 8259), but a sender may declare another charset."""
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in ("utf-8", "utf8", ""):
            try:
                return body.decode(charset).encode()
            except (LookupError, UnicodeDecodeError):
                raise InvalidPayload(f"the body is not valid {charset[:40]}") from None
    return body


def _external_id(kind: str, data: dict[str, Any]) -> str:
    value = data.get("id")
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidPayload(f"{kind}.id must be a number or a string, not {_type_name(value)}")
    text = str(value).strip()
    if not text or len(text) > MAX_ID_LENGTH:
        raise InvalidPayload(f"{kind}.id must have 1 to {MAX_ID_LENGTH} characters")
    return text


def _identity_digest(kind: str, data: dict[str, Any]) -> str:
    identifying = {name: data[name] for name in _IDENTIFYING[kind] if name in data}
    if not identifying:  # nothing the portal knows: whatever does not change
        identifying = {name: value for name, value in data.items() if name not in _CHANGING}
    canonical = orjson.dumps(identifying, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def _treated(kind: str, data: dict[str, Any]) -> bool:
    # Spec 2.6: a boolean, never null. Guessing false would hide a fine that
    # was handled, guessing true one that was not: neither is ours to decide.
    if "treated" not in data:
        raise InvalidPayload(f"{kind}.treated is missing (the spec says it is always sent)")
    value = data["treated"]
    if value is None:
        raise InvalidPayload(f"{kind}.treated is null (the spec says it is never null)")
    if not isinstance(value, bool):
        raise InvalidPayload(f"{kind}.treated must be true or false, not {_type_name(value)}")
    return value


def _link(data: dict[str, Any], payload: dict[str, Any], name: str) -> str | None:
    # Spec 2.6 names them beside `frame`; senders also put them inside: inside wins.
    value = data[name] if name in data else payload.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidPayload(f"{name} must be a URL or null, not {_type_name(value)}")
    return value.strip() or None


def _sample(value: object) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= _SAMPLE_LENGTH else f"{text[: _SAMPLE_LENGTH - 1]}…"


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)
