"""The fines export: every fine the list's filters select, as rows for a CSV, with who was
driving (the driver, how it is known, the candidates and the window where uncertain),
the drivers' names looked up once per chunk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date, datetime
from decimal import Decimal
from itertools import batched
from typing import Any, NamedTuple

from fleet.services.drivers import driver_names
from fleet.services.fines import fine_filtered
from fleet.services.paging import EXPORT_CHUNK, streamed
from fleet.services.scopes import VehicleScope
from fleet.webhooks.facts import FineFacts, fine_facts
from fleet.webhooks.payloads import payload_plate, payload_text

# What an export reads of a fine: its columns, and of its payload (decoded once) what
# only the payload has; no model instances (a million fines in seconds, not minutes).
EXPORT_COLUMNS = (
    "payload",
    "reference",
    "amount",
    "occurred_at",
    "treated",
    "link_frame",
    "link",
    "received_at",
    "updated_at",
    "external_id",
    # The deadlines, each with how it is known (`fleet.models.indications`).
    "indication",
    "indication_due",
    "indication_due_basis",
    "payment_due",
    "payment_due_basis",
    "driver_id",
    "driver_basis",
    # Where the driver is uncertain: the candidates, and the window of the hand-over (the
    # period after it: `fleet.services.attribution`).
    "driver_span__previous_driver_id",
    "driver_span__driver_id",
    "driver_span__previous_seen",
    "driver_span__first_seen",
)


class ExportedFine(NamedTuple):
    """A fine as an export writes it: its columns, and what its payload says that no
    column holds (the plate and infraction as sent; the amount and moment as sent, for
    when they could not be read; the infraction's facts)."""

    plate: str
    description: str
    reference: str
    amount: Decimal | None
    amount_text: str
    occurred_at: datetime | None
    occurred_at_text: str
    treated: bool
    link_frame: str
    link: str
    received_at: datetime
    updated_at: datetime
    external_id: str
    indication: str | None
    indication_due: date | None
    indication_due_basis: str | None
    payment_due: date | None
    payment_due_basis: str | None
    driver_id: int | None
    driver_basis: str
    span_previous_driver_id: int | None
    span_driver_id: int | None
    window_start: datetime | None
    window_end: datetime | None
    names: Mapping[int, str] = {}  # the drivers' names, of this fine and its neighbours
    facts: FineFacts = FineFacts()  # the infraction's, as its payload sends them


def fine_export(*, scope: VehicleScope, **filters: Any) -> Iterator[ExportedFine]:
    """Every fine `fine_search` would list, in its order, read a chunk at a time; the
    drivers' names looked up once per `EXPORT_CHUNK` fines."""
    rows = fine_filtered(scope=scope, **filters).values_list(*EXPORT_COLUMNS)
    for block in batched(streamed(rows), EXPORT_CHUNK, strict=False):
        drivers = {d for row in block for d in (row[-6], row[-4], row[-3]) if d is not None}
        names = driver_names(list(drivers)) if drivers else {}
        for payload, reference, amount, occurred_at, *columns in block:
            amount_text = "" if amount is not None else payload_text(payload, "amount")
            occurred_at_text = (
                "" if occurred_at is not None else payload_text(payload, "occurredAt")
            )
            yield ExportedFine._make(
                [
                    payload_plate(payload),
                    payload_text(payload, "description"),
                    reference,
                    amount,
                    amount_text,
                    occurred_at,
                    occurred_at_text,
                    *columns,
                    names,
                    fine_facts(payload),
                ]
            )


def facts_cells(facts: FineFacts) -> list[object]:
    """A fine's infraction facts as an export's cells, in the order of its header (code,
    severity, points, city, UF, authority): empty where not sent; the points a number (or
    the text as sent)."""
    points: object = facts.points if facts.points is not None else facts.points_text
    severity = str(facts.severity_shown)
    return [facts.code, severity, points, facts.city, facts.state, facts.authority]
