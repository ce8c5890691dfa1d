"""The indication packet: for each fine, what the traffic authority's form to identify the
driver (Formulário de Identificação do Condutor Infrator) asks, as a PDF to print, sign
and send: the notice, the infraction, the vehicle, the driver with their licence, and
lines for the driver's and the company's signatures.

Always in Portuguese, whatever the reader's language: it goes to a Brazilian authority.
What the portal does not know is a line to fill in by hand, never a guess. The licence is
the one of the newest CNH lookup the user may open whose answer names the driver; its CPF
in full only for a user allowed to see full CPFs, and then recorded (`CpfDisclosure`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from io import BytesIO
from typing import Any, Final
from xml.sax.saxutils import escape

from django.contrib.auth.models import User
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import override
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import (
    Flowable,
    KeepTogether,
    PageBreak,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

from fleet import cpf, plates
from fleet.api.licences import CnhLicence, cnh_licence_from_json
from fleet.models import (
    CnhItemStatus,
    CnhLookup,
    CnhLookupItem,
    CpfDisclosurePlace,
    DeadlineBasis,
    DriverBasis,
    DriverIndication,
    Fine,
    Indication,
    IndicationOutcome,
)
from fleet.services.cnh_privacy import cpf_disclosure_record, cpf_full_allowed
from fleet.services.cnh_results import cnh_lookups_seen
from fleet.services.drivers import driver_names
from fleet.webhooks.facts import folded
from portal.lib import formatting

# Fines in one packet: a day's work for a fleet, a PDF of a few hundred kilobytes.
PACKET_LIMIT: Final = 200
# The packet's language, whatever the reader's.
PACKET_LANGUAGE: Final = "pt-br"
# What is not known: a line to fill in by hand.
BLANK: Final = "_" * 40


class PacketTooLarge(Exception):
    """More fines than `PACKET_LIMIT` were asked for in one packet."""

    def __init__(self, count: int) -> None:
        super().__init__(f"{count} fines asked for, at most {PACKET_LIMIT}")
        self.count = count
        self.limit = PACKET_LIMIT


@dataclass(frozen=True, slots=True)
class PacketDriver:
    """The driver a fine's packet names, and how the portal knows them."""

    driver_id: int
    how: str  # in the packet's language
    name: str = ""
    licence: CnhLicence | None = None
    cpf: str = ""  # digits, "" when none is known
    lookup_id: int | None = None


def packet_drivers(fines: Sequence[Fine]) -> dict[int, tuple[int, str]]:
    """Each fine's driver for its packet (by fine id): the driver of its latest indication
    the authority has not refused, else the one it is attributed to; with how it is known
    (in the active language). A fine with neither is not in the result."""
    indicated: dict[int, DriverIndication] = {}
    for indication in DriverIndication.objects.filter(fine__in=[fine.pk for fine in fines]):
        if indication.outcome != IndicationOutcome.REFUSED:
            indicated.setdefault(indication.fine_id, indication)  # newest first
    basis = {value: str(label) for value, label in DriverBasis.choices}
    drivers: dict[int, tuple[int, str]] = {}
    for fine in fines:
        if (latest := indicated.get(fine.pk)) is not None:
            day = date_format(latest.indicated_on, "SHORT_DATE_FORMAT")
            drivers[fine.pk] = (latest.driver_id, _("indicated on %(day)s") % {"day": day})
        elif fine.driver_id is not None:
            how = basis.get(fine.driver_basis, "")
            if fine.driver_basis in (DriverBasis.LIST, DriverBasis.UNCERTAIN):
                how = _("%(how)s: check who was driving") % {"how": how}
            drivers[fine.pk] = (fine.driver_id, how)
    return drivers


def fine_packet(
    *, user: User, fines: Sequence[Fine], drivers: Mapping[int, int] | None = None
) -> bytes:
    """The packet of `fines` (one page each, in their order) as PDF bytes. `drivers` names
    a fine's driver (by fine id) where the caller knows better than `packet_drivers`.
    Full CPFs shown are recorded against their lookups (`CpfDisclosure`)."""
    if len(fines) > PACKET_LIMIT:
        raise PacketTooLarge(len(fines))
    with override(PACKET_LANGUAGE):
        chosen = packet_drivers(fines)
        for fine_id, driver_id in (drivers or {}).items():
            chosen[fine_id] = (driver_id, _("chosen for this packet"))
        named = _drivers_named(user=user, chosen=chosen.values())
        show_cpf = cpf_full_allowed(user=user)
        story: list[Flowable] = []
        for number, fine in enumerate(fines):
            if number:
                story.append(PageBreak())
            found = chosen.get(fine.pk)
            driver = replace(named[found[0]], how=found[1]) if found is not None else None
            story += _fine_section(fine, driver, show_cpf=show_cpf)
        pdf = _document(story)
    if show_cpf:
        _disclosures_record(user=user, chosen=[named[id_] for id_, _how in chosen.values()])
    return pdf


def packet_filename(fines: Sequence[Fine]) -> str:
    """`indicacao-ABC1D23-E01.pdf` for one fine, `indicacoes-2026-12-01.pdf` for many."""
    if len(fines) == 1:
        parts = ["indicacao", plates.normalize(fines[0].plate), fines[0].reference]
        return "-".join(_safe(part) for part in parts if _safe(part)) + ".pdf"
    return f"indicacoes-{timezone.localdate().isoformat()}.pdf"


def _safe(text: str) -> str:
    return "".join(char for char in text if char.isascii() and (char.isalnum() or char in "-_"))


# --- The drivers' names and licences ---------------------------------------------------


def _drivers_named(*, user: User, chosen: Iterable[tuple[int, str]]) -> dict[int, PacketDriver]:
    """Each driver id with their name and, where a lookup `user` may open names them, the
    newest lookup's licence and CPF."""
    ids = sorted({driver_id for driver_id, _how in chosen})
    names = driver_names(ids)
    licences = _licences(user=user, names={folded_name(name) for name in names.values()})
    named = {}
    for driver_id in ids:
        name = names.get(driver_id, "")
        licence, digits, lookup_id = licences.get(folded_name(name), (None, "", None))
        named[driver_id] = PacketDriver(driver_id, "", name, licence, digits, lookup_id)
    return named


def folded_name(name: object) -> str:
    """A name as two spellings of it compare: without case, accents or extra spaces."""
    return " ".join(folded(name).split()) if isinstance(name, str) else ""


def _licences(*, user: User, names: set[str]) -> dict[str, tuple[CnhLicence, str, int]]:
    """For each of `names` (folded) that a found licence names: the licence, its CPF and
    its lookup, from the newest such lookup `user` may open. The answers are read newest
    first until each name is found (a lookup's answers are kept for the retention days)."""
    names.discard("")
    found: dict[str, tuple[CnhLicence, str, int]] = {}
    if not names:
        return found
    items = (
        CnhLookupItem.objects.filter(
            lookup__in=cnh_lookups_seen(user=user), status=CnhItemStatus.OK
        )
        .order_by("-lookup__created_at", "-lookup_id", "position")
        .values_list("lookup_id", "cpf", "result")
    )
    for lookup_id, digits, result in items.iterator(chunk_size=500):
        if not isinstance(result, dict):
            continue
        key = folded_name(result.get("name"))
        if key in names and key not in found:
            found[key] = (cnh_licence_from_json(result), digits, lookup_id)
            if len(found) == len(names):
                break
    return found


def _disclosures_record(*, user: User, chosen: list[PacketDriver]) -> None:
    """One record per lookup whose CPFs the packet shows in full, with how many."""
    by_lookup: dict[int, set[str]] = {}
    for driver in chosen:
        if driver.lookup_id is not None and driver.cpf:
            by_lookup.setdefault(driver.lookup_id, set()).add(driver.cpf)
    for lookup in CnhLookup.objects.filter(pk__in=by_lookup):
        cpf_disclosure_record(
            user=user,
            lookup=lookup,
            place=CpfDisclosurePlace.PACKET,
            count=len(by_lookup[lookup.pk]),
        )


# --- The document ----------------------------------------------------------------------


def _styles() -> dict[str, ParagraphStyle]:
    sheet = getSampleStyleSheet()
    return {
        "title": ParagraphStyle("title", parent=sheet["Title"], fontSize=15, spaceAfter=2 * mm),
        "subtitle": ParagraphStyle("subtitle", parent=sheet["Normal"], alignment=1),
        "heading": ParagraphStyle(
            "heading", parent=sheet["Heading3"], spaceBefore=4 * mm, spaceAfter=1 * mm
        ),
        "body": ParagraphStyle("body", parent=sheet["Normal"], fontSize=9.5, leading=12),
        "note": ParagraphStyle(
            "note", parent=sheet["Normal"], fontSize=8, leading=10, textColor=colors.grey
        ),
    }


def _fields(rows: list[tuple[str, str]], style: ParagraphStyle) -> Table:
    """A two-column table of label and value; an empty value is a line to fill in."""
    table = Table(
        [
            [Paragraph(f"<b>{escape(label)}</b>", style), Paragraph(escape(value or BLANK), style)]
            for label, value in rows
        ],
        colWidths=[55 * mm, 115 * mm],
    )
    table.setStyle(
        TableStyle(
            [
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("LINEBELOW", (0, 0), (-1, -1), 0.25, colors.lightgrey),
                ("TOPPADDING", (0, 0), (-1, -1), 2),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 2),
            ]
        )
    )
    return table


def _fine_section(fine: Fine, driver: PacketDriver | None, *, show_cpf: bool) -> list[Flowable]:
    """One fine's page, in the active language (the packet's)."""
    style = _styles()
    facts = fine.facts
    code = facts.code
    infraction = " — ".join(part for part in (code, fine.description) if part)
    parts: list[Flowable] = [
        Paragraph(
            escape(_("Identification of the driver who committed the infraction")), style["title"]
        ),
        Paragraph(
            escape(
                _(
                    "The facts the authority's form (Formulário de Identificação do "
                    "Condutor Infrator) asks for."
                )
            ),
            style["subtitle"],
        ),
        Paragraph(escape(_("The infraction")), style["heading"]),
        _fields(
            [
                (_("Notice number"), fine.reference),
                (_("Infraction (code and description)"), infraction),
                (
                    _("Committed on"),
                    formatting.moment(fine.occurred_at, sent=fine.occurred_at_text),
                ),
                (_("Place (city/UF)"), facts.place),
                (_("Issuing authority"), facts.authority),
                (_("Amount"), formatting.amount(fine.amount, sent=fine.amount_text)),
                (_("Indicate the driver by"), _deadline(fine)),
            ],
            style["body"],
        ),
        Paragraph(escape(_("The vehicle")), style["heading"]),
        _fields(
            [
                (_("Plate"), plates.display_if_plate(fine.plate)),
                (_("Make and model"), ""),
                (_("RENAVAM"), ""),
            ],
            style["body"],
        ),
        Paragraph(escape(_("The driver")), style["heading"]),
        *_driver_fields(driver, show_cpf=show_cpf, style=style),
        Paragraph(escape(_("Signatures")), style["heading"]),
        KeepTogether(_signatures(style)),
    ]
    return parts


def _deadline(fine: Fine) -> str:
    """The indication deadline and how it is known; "" when none is known."""
    if fine.indication_due is None:
        return ""
    known = {value: str(label) for value, label in DeadlineBasis.choices}
    day = date_format(fine.indication_due, "SHORT_DATE_FORMAT")
    how = known.get(fine.indication_due_basis or "", "")
    shown = f"{day} ({how})" if how else day
    if fine.indication not in (Indication.NEEDED, None):
        shown += " — " + str(dict(Indication.choices).get(fine.indication, ""))
    return shown


def _driver_fields(
    driver: PacketDriver | None, *, show_cpf: bool, style: dict[str, ParagraphStyle]
) -> list[Flowable]:
    licence = driver.licence if driver else None
    cpf_shown = ""
    notes = []
    if driver is None:
        notes.append(_("The portal does not know who was driving: fill in the driver by hand."))
    elif not driver.name:
        notes.append(
            _("Driver %(id)s has no name in the portal: fill in the driver by hand.")
            % {"id": driver.driver_id}
        )
    if driver is not None and driver.name and licence is None:
        notes.append(
            _("Licence (CNH) not looked up: fill in its number, category and expiry by hand.")
        )
    if driver is not None and driver.cpf:
        if show_cpf:
            cpf_shown = cpf.display(driver.cpf)
        else:
            notes.append(_("CPF not shown: you may not see full CPFs. Fill it in by hand."))
    expires = licence.expires_on if licence else None
    rows = [
        (_("Name"), driver.name if driver else ""),
        (_("How the driver is known"), driver.how if driver and driver.name else ""),
        (_("CPF"), cpf_shown),
        (_("Licence (CNH) number"), (licence.number or "") if licence else ""),
        (_("Category"), (licence.category or "") if licence else ""),
        (_("Expires on"), _day(expires)),
    ]
    return [
        _fields(rows, style["body"]),
        *(Paragraph(escape(note), style["note"]) for note in notes),
    ]


def _day(value: date | None) -> str:
    return date_format(value, "SHORT_DATE_FORMAT") if value else ""


def _signatures(style: dict[str, ParagraphStyle]) -> list[Flowable]:
    line = "_" * 38
    rows: list[list[Any]] = [
        [Paragraph(line, style["body"]), Paragraph(line, style["body"])],
        [
            Paragraph(escape(_("Signature of the driver")), style["body"]),
            Paragraph(escape(_("Signature of the company's representative")), style["body"]),
        ],
    ]
    table = Table(rows, colWidths=[85 * mm, 85 * mm], rowHeights=[18 * mm, None])
    table.setStyle(TableStyle([("VALIGN", (0, 0), (-1, 0), "BOTTOM")]))
    place = escape(_("Place and date")) + ": " + "_" * 50
    return [Spacer(1, 4 * mm), Paragraph(place, style["body"]), table]


def _document(story: list[Flowable]) -> bytes:
    buffer = BytesIO()
    document = SimpleDocTemplate(
        buffer,
        pagesize=A4,
        leftMargin=20 * mm,
        rightMargin=20 * mm,
        topMargin=18 * mm,
        bottomMargin=18 * mm,
        title=_("Identification of the driver who committed the infraction"),
        invariant=True,
    )
    document.build(story)
    return buffer.getvalue()
